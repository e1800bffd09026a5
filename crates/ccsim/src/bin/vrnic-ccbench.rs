//! The DCQCN simulation bench (docs/congestion.md): runs
//! `engine::cc::sim` for 2 and 4 flows with congestion control on and off
//! (`SimConfig::standard`, "paper" parameters) and on with every ConnectX
//! default (`SimConfig::firmware_defaults`),
//! prints one BENCH line per run and writes an SVG per run (each flow's RP
//! rate and the bottleneck queue over time) into the directory given as the
//! first argument (default `target/ccbench`). Then bench-cc's path
//! (`SimConfig::bench_cc`: 2 window-limited flows, 50 Mbit/s lines, a 30 Mbit/s
//! RED bottleneck on Linux's EWMA) with the ConnectX defaults and the tuned
//! set: `BENCH cc_model params=defaults|tuned goodput=G jain=J
//! queue_p50_ms=Q queue_p99_ms=Q drops=D cnp_handled=H` (from 0.5 s on), and
//! `cc-bench-model-<params>.svg`.
//!
//! `BENCH cc flows=N dcqcn=on|off params=paper|fw-defaults jain=J goodput=G queue_p99_kb=Q queue_max_kb=M drops=D converged_ms=C
//! cnp_handled=H cnp_ignored=I`: Jain over the last 20 ms, goodput from 10 ms after the last flow's start,
//! the queue from the last start, converged = from the last start until every 5 ms window has Jain ≥ 0.9.

#![forbid(unsafe_code)]

use std::fmt::Write as _;
use std::path::PathBuf;

use vrnic_cc::RpParams;
use vrnic_ccsim::{run, SimConfig, SimResult};

const COLORS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];

/// A polyline of (t, y) scaled into a plot box.
fn polyline(pts: impl Iterator<Item = (f64, f64)>, sx: f64, sy: f64, x0: f64, y0: f64, color: &str) -> String {
    let mut s = String::new();
    for (t, y) in pts {
        let _ = write!(s, "{:.1},{:.1} ", x0 + t * sx, y0 - y * sy);
    }
    format!("<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1\" points=\"{s}\"/>\n")
}

/// A plot box: left edge, bottom edge, width, height.
struct Frame {
    x0: f64,
    y0: f64,
    w: f64,
    h: f64,
}

fn axis(f: &Frame, ymax: f64, unit: &str, tmax_ms: f64, title: &str) -> String {
    let Frame { x0, y0, w, h } = *f;
    let mut s = format!(
        "<rect x=\"{x0}\" y=\"{}\" width=\"{w}\" height=\"{h}\" fill=\"none\" stroke=\"#888\"/>\n\
         <text x=\"{x0}\" y=\"{}\" font-size=\"13\">{title}</text>\n",
        y0 - h,
        y0 - h - 6.0
    );
    for k in 0..=4 {
        let y = y0 - h * k as f64 / 4.0;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{:.0}{unit}</text>",
            x0 - 4.0,
            y + 3.0,
            ymax * k as f64 / 4.0
        );
        let x = x0 + w * k as f64 / 4.0;
        let _ = writeln!(
            s,
            "<text x=\"{x:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{:.0} ms</text>",
            y0 + 12.0,
            tmax_ms * k as f64 / 4.0
        );
    }
    s
}

/// Rate per flow (Gb/s, or Mb/s below 1 Gb/s) and queue (KB) over time, as plain SVG.
fn svg(cfg: &SimConfig, r: &SimResult, title: &str) -> String {
    let (w, h, x0) = (760.0, 200.0, 60.0);
    let tmax = cfg.duration_ns as f64 / 1e6;
    let sx = w / tmax;
    let (unit, div) = if cfg.nic_bps >= 1_000_000_000 { ("G", 1e9) } else { ("M", 1e6) };
    let gmax = cfg.nic_bps as f64 / div;
    let qmax = (r.queue_max as f64 / 1e3).max(cfg.red.kmax as f64 / 1e3).max(1.0);
    // At most ~800 points per line.
    let step = (r.samples.len() / 800).max(1);
    let mut s = String::from(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"860\" height=\"560\" font-family=\"sans-serif\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
    );
    let y1 = 40.0 + h;
    s += &axis(&Frame { x0, y0: y1, w, h }, gmax, unit, tmax, &format!("{title}: RP rate per flow ({unit}b/s)"));
    for i in 0..cfg.flows {
        let pts = r.samples.iter().step_by(step).map(|p| (p.t_ns as f64 / 1e6, (p.rate_bps[i] as f64 / div).min(gmax)));
        s += &polyline(pts, sx, h / gmax, x0, y1, COLORS[i % COLORS.len()]);
    }
    let y2 = y1 + 60.0 + h;
    s += &axis(&Frame { x0, y0: y2, w, h }, qmax, "K", tmax, "bottleneck queue (KB); dashed: RED Kmin, Kmax");
    for k in [cfg.red.kmin, cfg.red.kmax] {
        let y = y2 - k as f64 / 1e3 * h / qmax;
        let _ = writeln!(
            s,
            "<line x1=\"{x0}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>",
            x0 + w
        );
    }
    let pts = r.samples.iter().step_by(step).map(|p| (p.t_ns as f64 / 1e6, p.queue_bytes as f64 / 1e3));
    s += &polyline(pts, sx, h / qmax, x0, y2, "#333");
    s += "</svg>\n";
    s
}

fn main() {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "target/ccbench".into()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("ccbench: {}: {e}", dir.display());
        std::process::exit(1);
    }
    type Make = fn(usize, bool) -> SimConfig;
    let runs: [(&str, Make, bool); 3] = [
        ("paper", SimConfig::standard, true),
        ("paper", SimConfig::standard, false),
        ("fw-defaults", SimConfig::firmware_defaults, true),
    ];
    for flows in [2usize, 4] {
        for (params, make, dcqcn) in runs {
            let cfg = make(flows, dcqcn);
            let r = run(&cfg);
            let from = cfg.duration_ns - 20_000_000;
            let conv = r.converged_at(&cfg, 5_000_000, 0.90);
            let onoff = if dcqcn { "on" } else { "off" };
            println!(
                "BENCH cc flows={flows} dcqcn={onoff} params={params} jain={:.3} goodput={:.3} queue_p99_kb={:.1} queue_max_kb={:.1} drops={} \
                 converged_ms={} cnp_handled={} cnp_ignored={}",
                r.jain_after(&cfg, from),
                r.goodput_after(&cfg, cfg.last_start() + 10_000_000),
                r.queue_percentile(cfg.last_start(), 99.0) as f64 / 1e3,
                r.queue_max as f64 / 1e3,
                r.dropped,
                conv.map_or("never".to_string(), |t| format!("{:.1}", (t - cfg.last_start()) as f64 / 1e6)),
                r.counters.rp_cnp_handled,
                r.counters.rp_cnp_ignored,
            );
            let path = dir.join(format!("cc-{flows}flows-dcqcn-{onoff}-{params}.svg"));
            let title = format!("{flows} flows, DCQCN {onoff} ({params} parameters)");
            if let Err(e) = std::fs::write(&path, svg(&cfg, &r, &title)) {
                eprintln!("ccbench: {}: {e}", path.display());
                std::process::exit(1);
            }
        }
    }
    // bench-cc's path.
    // (DCQCN off is not modelled: the live path then sends Not-ECT frames,
    // RED drops them and RC recovers by go-back-N, which the model lacks.)
    let runs: [(&str, bool, RpParams); 2] =
        [("defaults", true, RpParams::default()), ("tuned", true, SimConfig::bench_cc_tuned())];
    for (params, dcqcn, rp) in runs {
        let cfg = SimConfig::bench_cc(dcqcn, rp);
        let r = run(&cfg);
        let from = 500_000_000;
        let ms = |b: u64| b as f64 * 8.0 / cfg.link_bps as f64 * 1e3;
        println!(
            "BENCH cc_model params={params} goodput={:.3} jain={:.3} queue_p50_ms={:.1} queue_p99_ms={:.1} drops={} cnp_handled={}",
            r.goodput_after(&cfg, from),
            r.jain_after(&cfg, from),
            ms(r.queue_percentile(from, 50.0)),
            ms(r.queue_percentile(from, 99.0)),
            r.dropped,
            r.counters.rp_cnp_handled,
        );
        let path = dir.join(format!("cc-bench-model-{params}.svg"));
        let title = format!("bench-cc model, {params}");
        if let Err(e) = std::fs::write(&path, svg(&cfg, &r, &title)) {
            eprintln!("ccbench: {}: {e}", path.display());
            std::process::exit(1);
        }
    }
}
