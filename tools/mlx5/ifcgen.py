#!/usr/bin/env python3
"""tools/mlx5/ifcgen.py - generate crates/mlx5-ifc/src/ifc.rs from the kernel's mlx5_ifc.h (python3 stdlib only).

Usage:
    tools/mlx5/ifcgen.py KERNEL_SRC [-o crates/mlx5-ifc/src/ifc.rs]

KERNEL_SRC is the top of a kernel source tree; only the files in SOURCES (and `Makefile`, for the
version) are read, so a partial extraction is enough. The checked-in ifc.rs comes from Debian trixie's
linux-source-6.12 (the guest's kernel):

    A=~/.cache/vrnic/apt   # the private apt state qemu/fetch creates (trixie sources, never the system's)
    apt-get -o Dir::Etc::SourceList=$A/trixie.sources -o Dir::Etc::SourceParts=$A/empty \
        -o Dir::State::Lists=$A/lists -o Dir::Cache=$A/cache -o Dir::Etc::Preferences=/nonexistent \
        -o Dir::Etc::PreferencesParts=$A/empty -o APT::Sandbox::User=root download linux-source-6.12
    dpkg-deb --fsys-tarfile linux-source-6.12_*_all.deb | tar -xO ./usr/src/linux-source-6.12.tar.xz \
        | tar -xJ --wildcards linux-source-6.12/Makefile 'linux-source-6.12/include/linux/mlx5/*' \
          linux-source-6.12/drivers/net/ethernet/mellanox/mlx5/core/cmd.c
    tools/mlx5/ifcgen.py linux-source-6.12

The output header records the kernel version and the sha256 of every source file. The output is
passed through rustfmt (when installed, default style whatever rustfmt.toml is around the output).

Output, for every struct/union `mlx5_ifc_<name>_bits` in STRUCTS (plus, transitively, every struct
type nested in them by value or as an array element):

    pub mod <name> {
        pub const SIZE: usize = <bytes>;
        pub const FIELDS: &[(&str, Field)];   // (name, field) of every top-level Field, layout order
        pub const <field>: Field = Field::new(<bit offset>, <bits>);   // u8 field[bits], u8 bytes[N][0x8]
        pub const <arr>:   Array = Array::new(<bit offset>, <elem bits>, <count>); // u8 a[N][M], struct T a[N]
        pub const <member>: Field = ...;      // nested struct/union by value: its whole region
        pub mod <member> { ... }              // nested *struct*: its fields again, offsets from the
                                              // start of <name> (absolute), recursively
    }

Naming: field names exactly as in mlx5_ifc.h (a Rust keyword becomes a raw identifier, `r#type`).
`reserved_*` fields are skipped. Anonymous inline unions/structs are flattened into their parent (as
C does). Nested unions (e.g. `hca_cap_union capability`) get only the region constant: compose with the
union member's own module, `query_hca_cap_out::capability.inner(cmd_hca_cap::log_max_qp)`.
Flexible arrays (`pas[]`) are Arrays with count 0. A 64-bit counter split in two dwords (`u8 X_high[0x20]`
directly followed by `u8 X_low[0x20]`) also gets `pub const X: Field` over both (what MLX5_GET64 at `X_high`
reads); it is not in FIELDS, which holds header names only.

Constants: every enum entry whose name starts with one of CONST_PREFIXES, from the headers in
CONST_HEADERS, as `pub const NAME: u32` (u64 when it does not fit).
"""
import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile

# ---------------------------------------------------------------------------------------------
# The layouts we need (names without `mlx5_ifc_` / `_bits`).
STRUCTS = [
    # command headers
    "mbox_in", "mbox_out", "general_obj_in_cmd_hdr", "general_obj_out_cmd_hdr", "cmd_pas",
    # HCA life cycle
    "enable_hca_in", "enable_hca_out", "disable_hca_in", "disable_hca_out",
    "query_issi_in", "query_issi_out", "set_issi_in", "set_issi_out",
    "query_pages_in", "query_pages_out", "manage_pages_in", "manage_pages_out",
    "query_hca_cap_in", "query_hca_cap_out", "set_hca_cap_in", "set_hca_cap_out",
    "init_hca_in", "init_hca_out", "teardown_hca_in", "teardown_hca_out",
    "set_driver_version_in", "set_driver_version_out",
    "query_adapter_in", "query_adapter_out", "query_adapter_param_block",
    "query_special_contexts_in", "query_special_contexts_out",
    # UAR, EQ, events
    "alloc_uar_in", "alloc_uar_out", "dealloc_uar_in", "dealloc_uar_out",
    "create_eq_in", "create_eq_out", "destroy_eq_in", "destroy_eq_out", "query_eq_in", "query_eq_out",
    "eqc", "eqe", "event_auto", "pages_req_event",
    # registers
    "access_register_in", "access_register_out", "register_host_endianness", "pcam_reg", "mcam_reg",
    "qcam_reg", "ptys_reg", "pmtu_reg", "pvlc_reg", "paos_reg", "pmlp_reg", "ppcnt_reg",
    # IB management, vports
    "mad_ifc_in", "mad_ifc_out",
    "query_hca_vport_context_in", "query_hca_vport_context_out", "hca_vport_context",
    "modify_hca_vport_context_in", "modify_hca_vport_context_out",
    "query_hca_vport_gid_in", "query_hca_vport_gid_out", "query_hca_vport_pkey_in", "query_hca_vport_pkey_out",
    "query_vport_state_in", "query_vport_state_out",
    "query_nic_vport_context_in", "query_nic_vport_context_out", "nic_vport_context",
    "alloc_q_counter_in", "alloc_q_counter_out", "dealloc_q_counter_in", "dealloc_q_counter_out",
    "query_q_counter_in", "query_q_counter_out",
    # PD, XRCD, MKEY
    "alloc_pd_in", "alloc_pd_out", "dealloc_pd_in", "dealloc_pd_out",
    "alloc_xrcd_in", "alloc_xrcd_out", "dealloc_xrcd_in", "dealloc_xrcd_out",
    "create_mkey_in", "create_mkey_out", "query_mkey_in", "query_mkey_out", "destroy_mkey_in", "destroy_mkey_out",
    "mkc",
    # DevX user contexts and their memory (devx/)
    "create_uctx_in", "create_uctx_out", "destroy_uctx_in", "destroy_uctx_out", "uctx",
    "create_umem_in", "create_umem_out", "destroy_umem_in", "destroy_umem_out", "umem",
    # CQ
    "create_cq_in", "create_cq_out", "destroy_cq_in", "destroy_cq_out", "query_cq_in", "query_cq_out",
    "modify_cq_in", "modify_cq_out", "cqc",
    # SRQ
    "create_srq_in", "create_srq_out", "destroy_srq_in", "destroy_srq_out", "query_srq_in", "query_srq_out",
    "srqc", "arm_rq_in", "arm_rq_out", "wq", "rmpc",
    # ISSI 1 SRQs: basic ones as RMPs, XRC SRQs with their user index
    "create_rmp_in", "create_rmp_out", "modify_rmp_in", "modify_rmp_out", "rmp_bitmask", "query_rmp_in",
    "query_rmp_out", "destroy_rmp_in", "destroy_rmp_out", "create_xrc_srq_in", "create_xrc_srq_out", "xrc_srqc",
    "destroy_xrc_srq_in", "destroy_xrc_srq_out", "query_xrc_srq_in", "query_xrc_srq_out", "arm_xrc_srq_in",
    "arm_xrc_srq_out",
    # QP
    "create_qp_in", "create_qp_out", "destroy_qp_in", "destroy_qp_out", "query_qp_in", "query_qp_out",
    "qpc", "ads",
    "rst2init_qp_in", "rst2init_qp_out", "init2init_qp_in", "init2init_qp_out",
    "init2rtr_qp_in", "init2rtr_qp_out", "rtr2rts_qp_in", "rtr2rts_qp_out",
    "rts2rts_qp_in", "rts2rts_qp_out", "sqerr2rts_qp_in", "sqerr2rts_qp_out",
    "sqd2rts_qp_in", "sqd2rts_qp_out", "qp_2err_in", "qp_2err_out", "qp_2rst_in", "qp_2rst_out",
    # multicast, device memory
    "attach_to_mcg_in", "attach_to_mcg_out", "detach_from_mcg_in", "detach_from_mcg_out",
    "alloc_memic_in", "alloc_memic_out", "dealloc_memic_in", "dealloc_memic_out",
    # capability pages (QUERY_HCA_CAP op_mod >> 1 = enum mlx5_cap_type); what mlx5_query_hca_caps() reads
    "hca_cap_union", "cmd_hca_cap", "cmd_hca_cap_2", "atomic_caps", "roce_cap", "odp_cap",
    "device_mem_cap", "device_event_cap", "per_protocol_networking_offload_caps", "flow_table_nic_cap",
    "e_switch_cap", "flow_table_eswitch_cap", "qos_cap", "debug_cap", "port_selection_cap", "tls_cap",
    "ipsec_cap", "crypto_cap", "macsec_cap", "virtio_emulation_cap", "adv_virtualization_cap",
    # Ethernet: transport domains, TISes, SQs and RQs (eth/queues.rs)
    "alloc_transport_domain_in", "alloc_transport_domain_out", "dealloc_transport_domain_in",
    "dealloc_transport_domain_out", "create_tis_in", "create_tis_out", "destroy_tis_in", "destroy_tis_out", "tisc",
    "create_sq_in", "create_sq_out", "modify_sq_in", "modify_sq_out", "query_sq_in", "query_sq_out",
    "destroy_sq_in", "destroy_sq_out", "sqc",
    "create_rq_in", "create_rq_out", "modify_rq_in", "modify_rq_out", "query_rq_in", "query_rq_out",
    "destroy_rq_in", "destroy_rq_out", "rqc",
    # Ethernet vport and port/QoS registers (eth/vport.rs, eth/regs.rs, eth/qos_access.rs)
    "modify_nic_vport_context_in", "modify_nic_vport_context_out", "modify_vport_state_in", "modify_vport_state_out",
    "query_vport_counter_in", "query_vport_counter_out",
    "pfcc_reg", "qpts_reg", "qpdpm_reg", "qtct_reg", "qetc_reg",
    # NIC RX steering: flow tables, groups and entries, TIRs, RQTs (eth/steering.rs, eth/tir.rs).
    # dest_format: a non-extended `flow_context.destination[]` entry (8 bytes; the array's element type is
    # the 16-byte union of the extended format and the flow counter list)
    "create_flow_table_in", "create_flow_table_out", "modify_flow_table_in", "modify_flow_table_out",
    "destroy_flow_table_in", "destroy_flow_table_out", "set_flow_table_root_in", "set_flow_table_root_out",
    "create_flow_group_in", "create_flow_group_out", "destroy_flow_group_in", "destroy_flow_group_out",
    "set_fte_in", "set_fte_out", "delete_fte_in", "delete_fte_out", "flow_context", "dest_format",
    "create_tir_in", "create_tir_out", "modify_tir_in", "modify_tir_out", "destroy_tir_in", "destroy_tir_out",
    "create_rqt_in", "create_rqt_out", "modify_rqt_in", "modify_rqt_out", "destroy_rqt_in", "destroy_rqt_out",
    # RoCE: the GID table, congestion control (roce/address.rs, roce/cong.rs)
    "set_roce_address_in", "set_roce_address_out", "query_roce_address_in", "query_roce_address_out",
    "query_cong_status_in", "query_cong_status_out", "modify_cong_status_in", "modify_cong_status_out",
    "query_cong_params_in", "query_cong_params_out", "modify_cong_params_in", "modify_cong_params_out",
    "cong_control_roce_ecn_auto", "cong_control_r_roce_ecn_rp", "cong_control_r_roce_ecn_np",
    "cong_control_r_roce_general", "query_cong_statistics_in", "query_cong_statistics_out",
]

# Files read, relative to KERNEL_SRC: (path, read struct definitions too). Enums/#defines are read from
# all of them (constants-only files first). mbox_in/mbox_out live in cmd.c, not in mlx5_ifc.h.
SOURCES = [
    ("include/linux/mlx5/device.h", False),
    ("include/linux/mlx5/driver.h", False),
    ("include/linux/mlx5/qp.h", False),
    ("include/linux/mlx5/mlx5_ifc_fpga.h", True),   # included by mlx5_ifc.h (fpga_cap)
    ("include/linux/mlx5/mlx5_ifc.h", True),
    ("drivers/net/ethernet/mellanox/mlx5/core/cmd.c", True),
]
# enum constants to export (name prefixes)
CONST_PREFIXES = [
    "MLX5_CMD_OP_", "MLX5_CMD_STAT_", "MLX5_CMD_DELIVERY_STAT_", "CMD_IF_REV",
    "MLX5_CAP_GENERAL", "MLX5_CAP_ETHERNET_OFFLOADS", "MLX5_CAP_IPOIB_", "MLX5_CAP_ODP", "MLX5_CAP_ATOMIC",
    "MLX5_CAP_ROCE", "MLX5_CAP_FLOW_TABLE", "MLX5_CAP_ESWITCH", "MLX5_CAP_QOS", "MLX5_CAP_DEBUG",
    "MLX5_CAP_DEV_", "MLX5_CAP_VDPA_", "MLX5_CAP_PORT_SELECTION", "MLX5_CAP_TLS", "MLX5_CAP_IPSEC",
    "MLX5_CAP_CRYPTO", "MLX5_CAP_MACSEC", "MLX5_CAP_ADV_", "MLX5_CAP_NUM", "MLX5_CAP_RESERVED",
    "MLX5_CAP_PORT_TYPE_", "MLX5_HCA_CAP_OPMOD_", "MLX5_SET_HCA_CAP_OP_MOD_", "HCA_CAP_OPMOD_",
    "MLX5_TEARDOWN_HCA_", "MLX5_PAGES_", "MLX5_QUERY_PAGES_", "MLX5_BOOT_PAGES", "MLX5_INIT_PAGES",
    "MLX5_REG_", "MLX5_EVENT_TYPE_", "MLX5_PORT_CHANGE_SUBTYPE_", "MLX5_EVENT_QUEUE_TYPE_",
    "MLX5_QPC_ST_", "MLX5_QPC_STATE_", "MLX5_QPC_MTU_", "MLX5_QPC_ATOMIC_MODE_", "MLX5_QPC_PM_STATE_",
    "MLX5_QPC_CS_", "MLX5_QP_OPTPAR_", "MLX5_QP_STATE_", "MLX5_QP_ST_",
    "MLX5_MKC_ACCESS_MODE_", "MLX5_CQC_", "MLX5_CQE_", "MLX5_SRQC_", "MLX5_RQC_", "MLX5_WQ_TYPE_",
    "MLX5_VPORT_STATE_", "MLX5_HCA_VPORT_", "MLX5_ATOMIC_CAPS_", "MLX5_ATOMIC_OPS_",
    "MLX5_OPCODE_", "MLX5_ADS_STAT_RATE_", "MLX5_GENERAL_OBJ_TYPES_CAP_", "MLX5_DEV_CAP_FLAG_",
    "MLX5_SQC_STATE_", "MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_", "MLX5_FLOW_CONTEXT_ACTION_",
    "MLX5_IFC_FLOW_DESTINATION_TYPE_", "MLX5_MODIFY_FLOW_TABLE_", "MLX5_ROCE_VERSION_", "MLX5_ROCE_L3_TYPE_",
    "MLX5_SHARED_RESOURCE_UID", "MLX5_UCTX_CAP_",
]

# Big capability layouts the device reports as all-zero: their nested struct members get only the region
# constant, not a submodule (the nested types still get their own top-level modules).
NO_SUBMODULES = {"flow_table_nic_cap", "flow_table_eswitch_cap", "port_selection_cap"}

RUST_KEYWORDS = set("""as break const continue crate else enum extern false fn for if impl in let loop match mod
move mut pub ref return self Self static struct super trait true type unsafe use where while async await dyn
abstract become box do final macro override priv typeof unsized virtual yield try gen""".split())
NOT_RAW = {"self", "Self", "super", "crate"}


def rust_ident(name):
    if name in NOT_RAW:
        return name + "_"
    if name in RUST_KEYWORDS:
        return "r#" + name
    return name


# ---------------------------------------------------------------------------------------------
# Lexing / parsing

TOKEN = re.compile(r"\s*(?:([A-Za-z_]\w*)|(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|(.))", re.S)


def strip(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)      # string literals (in .c sources)
    text = re.sub(r"'(?:[^'\\\n]|\\.)+'", "0", text)       # character literals
    return text


def tokenize(text):
    out = []
    for m in TOKEN.finditer(text):
        if m.group(1):
            out.append(m.group(1))
        elif m.group(2):
            lit = m.group(2)
            out.append(int(lit, 16) if lit[:2] in ("0x", "0X") else int(lit, 8) if lit[0] == "0" else int(lit))
        elif m.group(3) and not m.group(3).isspace():
            out.append(m.group(3))
    return out


class ParseError(Exception):
    pass


class Parser:
    """Just enough C for mlx5_ifc.h: struct/union definitions of u8 bit arrays and nested aggregates,
    enums, and object-like #defines (used for array dimensions)."""

    def __init__(self):
        self.defs = {}      # name -> ("struct"|"union", [member])
        self.consts = {}    # enum/define name -> int
        self.const_order = []  # (header, name) in source order
        self.unresolved = []   # enum entries whose value could not be computed

    # member: dict(kind='u8'|'ref'|'inline', name, bits|type|body, dims=[...])
    @staticmethod
    def type_key(cname):
        n = cname[len("mlx5_ifc_"):] if cname.startswith("mlx5_ifc_") else cname
        return n[:-5] if n.endswith("_bits") else n

    def add(self, path, want_structs):
        """read enums and #defines from `path`; struct/union definitions too if `want_structs`"""
        header = os.path.basename(path)
        text = strip(open(path).read())
        self._defines(text, header)
        text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
        toks = tokenize(text)
        i, n = 0, len(toks)
        while i < n:
            t = toks[i]
            if want_structs and t in ("struct", "union") and i + 2 < n and isinstance(toks[i + 1], str) \
                    and toks[i + 1].startswith("mlx5_ifc_") and toks[i + 2] == "{":
                key = self.type_key(toks[i + 1])
                body, i = self._body(toks, i + 3)
                self.defs[key] = (t, body)
                continue
            if t == "enum":
                j = i + 1
                if isinstance(toks[j], str) and toks[j] != "{":
                    j += 1
                if toks[j] == "{":
                    i = self._enum(toks, j + 1, header)
                    continue
            i += 1

    def _defines(self, text, header):
        for m in re.finditer(r"^[ \t]*#define[ \t]+([A-Z_][A-Z0-9_]*)[ \t]+((?:[^\n]*\\\n)*[^\n]*)", text, re.M):
            v = self.eval(m.group(2).replace("\\\n", " "))
            if v is not None:
                self.consts.setdefault(m.group(1), v)

    def eval(self, expr):
        e = expr.strip()
        if not e:
            return None
        e = re.sub(r"<\s*<", "<<", re.sub(r">\s*>", ">>", e))  # re-join shift operators split by the lexer
        e = re.sub(r"\bBIT_ULL\s*\(", "(1<<", e)
        e = re.sub(r"\bBIT\s*\(", "(1<<", e)
        e = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", e)
        if not re.fullmatch(r"[\w\s()+\-*/<>|&~^]*", e):
            return None

        def sub(m):
            w = m.group(0)
            if re.fullmatch(r"0[xX][0-9a-fA-F]+|\d+", w):
                return w
            if w in self.consts:
                return str(self.consts[w])
            raise KeyError(w)
        try:
            e = re.sub(r"\b\w+\b", sub, e).replace("/", "//")
            return int(eval(e, {"__builtins__": {}}, {}))
        except Exception:
            return None

    def _enum(self, toks, i, header):
        nxt = 0
        known = True
        while toks[i] != "}":
            name = toks[i]
            i += 1
            if toks[i] == "=":
                j = i + 1
                depth = 0
                while not (depth == 0 and toks[j] in (",", "}")):
                    if toks[j] == "(":
                        depth += 1
                    elif toks[j] == ")":
                        depth -= 1
                    j += 1
                v = self.eval(" ".join(str(t) for t in toks[i + 1:j]))
                i = j
                known = v is not None
                if known:
                    nxt = v
            if not known:
                self.unresolved.append(name)
            if known:
                self.consts[name] = nxt
                if header:
                    self.const_order.append((header, name))
                nxt += 1
            if toks[i] == ",":
                i += 1
        return i + 1

    def _dim(self, toks, i):
        """toks[i] == '['; returns (value or 0 for [], next index)"""
        j = i + 1
        expr = []
        while toks[j] != "]":
            expr.append(str(toks[j]))
            j += 1
        if not expr:
            return 0, j + 1
        v = self.eval(" ".join(expr))
        if v is None:
            raise ParseError("cannot evaluate dimension %r" % " ".join(expr))
        return v, j + 1

    def _dims(self, toks, i):
        dims = []
        while toks[i] == "[":
            d, i = self._dim(toks, i)
            dims.append(d)
        return dims, i

    def _body(self, toks, i):
        """parse members until the matching '}'; returns (members, index after '}')"""
        members = []
        while toks[i] != "}":
            t = toks[i]
            if t == "u8":
                name = toks[i + 1]
                dims, i = self._dims(toks, i + 2)
                members.append(dict(kind="u8", name=name, dims=dims))
            elif t in ("struct", "union") and toks[i + 1] == "{":
                body, i = self._body(toks, i + 2)
                name = None
                if isinstance(toks[i], str) and toks[i] not in (";", "["):
                    name = toks[i]
                    i += 1
                dims, i = self._dims(toks, i)
                members.append(dict(kind="inline", agg=t, name=name, body=body, dims=dims))
            elif t in ("struct", "union"):
                tname = self.type_key(toks[i + 1])
                name = toks[i + 2]
                dims, i = self._dims(toks, i + 3)
                members.append(dict(kind="ref", agg=t, type=tname, name=name, dims=dims))
            elif t == "DECLARE_FLEX_ARRAY":
                # DECLARE_FLEX_ARRAY(struct mlx5_ifc_X_bits, name)
                agg, tname, name = toks[i + 2], self.type_key(toks[i + 3]), toks[i + 5]
                i += 7
                members.append(dict(kind="ref", agg=agg, type=tname, name=name, dims=[0]))
            else:
                raise ParseError("unexpected token %r near %r" % (t, toks[i - 5:i + 5]))
            while toks[i] in ("__packed",):
                i += 1
            if toks[i] != ";":
                raise ParseError("expected ';' got %r near %r" % (toks[i], toks[i - 5:i + 5]))
            i += 1
        return members, i + 1


def parse_sources(root):
    p = Parser()
    for rel, structs in SOURCES:
        p.add(os.path.join(root, rel), structs)
    return p


# ---------------------------------------------------------------------------------------------
# Layout

class Layout:
    def __init__(self, parser):
        self.p = parser
        self.sizes = {}

    def agg_size(self, kind, members):
        sizes = [self.member_size(m) for m in members]
        return max(sizes, default=0) if kind == "union" else sum(sizes)

    def type_size(self, tname):
        if tname not in self.sizes:
            if tname not in self.p.defs:
                raise ParseError("unknown type %s" % tname)
            kind, members = self.p.defs[tname]
            self.sizes[tname] = self.agg_size(kind, members)
        return self.sizes[tname]

    def elem_size(self, m):
        if m["kind"] == "u8":
            return m["dims"][-1]
        if m["kind"] == "ref":
            return self.type_size(m["type"])
        return self.agg_size(m["agg"], m["body"])

    def member_size(self, m):
        s = self.elem_size(m)
        dims = m["dims"][:-1] if m["kind"] == "u8" else m["dims"]
        for d in dims:
            s *= d
        return s


class Emitter:
    def __init__(self, layout):
        self.L = layout
        self.out = []
        self.needed = []  # struct types to emit as top-level modules
        self.seen = set()

    def w(self, depth, s):
        self.out.append("    " * depth + s if s else "")

    def want(self, tname):
        if tname not in self.seen:
            self.seen.add(tname)
            self.needed.append(tname)

    def members(self, kind, members, base, depth, names, expand=True):
        """emit the constants of an aggregate whose first bit is at `base`; `expand`: nested struct
        members also get a submodule (not inside unions, whose struct members have their own modules)"""
        off = base
        for k, m in enumerate(members):
            size = self.L.member_size(m)
            name = m.get("name")
            if m["kind"] == "u8":
                if not name.startswith("reserved"):
                    dims = m["dims"]
                    if len(dims) == 1:
                        self.emit_field(depth, name, off, dims[0], names, "u8 %s[0x%x]" % (name, dims[0]))
                        self.emit_high_low(depth, members, k, off, names)
                    elif len(dims) == 2 and dims[1] == 8 and dims[0] > 0:
                        # a byte array (u8 mad[256][0x8]): one Field over all of it, read with bytes()
                        self.emit_field(depth, name, off, dims[0] * 8, names, "u8 %s[%d][0x8]" % (name, dims[0]))
                    elif len(dims) == 2:
                        self.emit_array(depth, name, off, dims[1], dims[0], names,
                                        "u8 %s[%s][0x%x]" % (name, dims[0] or "", dims[1]))
                    else:
                        raise ParseError("3-dim array %s" % name)
            elif m["kind"] == "ref":
                tname = m["type"]
                tkind = self.L.p.defs[tname][0]
                cdecl = "%s mlx5_ifc_%s_bits %s" % (m["agg"], tname, name)
                if m["dims"]:
                    if len(m["dims"]) != 1:
                        raise ParseError("multi-dim struct array %s" % name)
                    cdecl += "[%s]" % (m["dims"][0] or "")
                    self.emit_array(depth, name, off, self.L.type_size(tname), m["dims"][0], names,
                                    cdecl + "; elements: [`%s`](super::%s)" % (tname, tname)
                                    if depth == 1 else cdecl)
                    if tkind == "struct":
                        self.want(tname)
                else:
                    if tkind == "union":
                        mem = [x.get("name") for x in self.L.p.defs[tname][1]
                               if x.get("name") and not x["name"].startswith("reserved")]
                        cdecl += " (union of %s)" % ", ".join(mem)
                    self.emit_field(depth, name, off, size, names, cdecl)
                    if tkind == "struct":
                        self.want(tname)
                        if expand and kind != "union":
                            self.submodule(depth, name, "struct", self.L.p.defs[tname][1], off, names)
            else:  # inline aggregate
                if name is None:  # anonymous: flatten (C semantics)
                    self.members(m["agg"], m["body"], off, depth, names, expand)
                elif m["dims"]:
                    self.emit_array(depth, name, off, self.L.agg_size(m["agg"], m["body"]), m["dims"][0],
                                    names, "inline %s %s[]" % (m["agg"], name))
                else:
                    self.emit_field(depth, name, off, size, names, "inline %s %s" % (m["agg"], name))
                    self.submodule(depth, name, m["agg"], m["body"], off, names, expand)
            if kind != "union":
                off += size

    def submodule(self, depth, name, kind, members, base, names, expand=True):
        key = ("mod", name)
        if key in names:
            raise ParseError("duplicate submodule %s" % name)
        names.add(key)
        self.w(depth, "/// Fields of `%s`, offsets from the start of the enclosing top-level struct." % name)
        self.w(depth, "pub mod %s {" % rust_ident(name))
        self.w(depth + 1, "#[allow(unused_imports)]")
        self.w(depth + 1, "use crate::fields::{Array, Field};")
        self.members(kind, members, base, depth + 1, set(), expand)
        self.w(depth, "}")

    def emit_field(self, depth, name, off, bits, names, cdecl):
        if name in names:
            raise ParseError("duplicate name %s" % name)
        names.add(name)
        if depth == 1:
            self.table.append(name)
        self.w(depth, "/// `%s` @ byte 0x%x%s" % (cdecl, off // 8, dwdesc(off, bits)))
        self.w(depth, "pub const %s: Field = Field::new(0x%x, 0x%x);" % (rust_ident(name), off, bits))

    def emit_high_low(self, depth, members, k, off, names):
        """after `X_low[0x20]` (members[k], at `off`) that directly follows `X_high[0x20]` (a 64-bit counter
        split in two dwords, which the driver reads with MLX5_GET64 at `X_high`): `X`, both dwords as one
        64-bit field; not in FIELDS (not a header name), skipped where the struct has a member `X`"""
        m = members[k]
        if k == 0 or not m["name"].endswith("_low") or m["dims"] != [0x20]:
            return
        x = m["name"][:-len("_low")]
        h = members[k - 1]
        if h["kind"] != "u8" or h.get("name") != x + "_high" or h["dims"] != [0x20]:
            return
        if x in names or any(o.get("name") == x for o in members):
            return
        names.add(x)
        self.w(depth, "/// `u8 %s_high[0x20]` + `u8 %s_low[0x20]` @ byte 0x%x: one 64-bit value (`MLX5_GET64` at `%s_high`)"
               % (x, x, (off - 0x20) // 8, x))
        self.w(depth, "pub const %s: Field = Field::new(0x%x, 0x40);" % (rust_ident(x), off - 0x20))

    def emit_array(self, depth, name, off, elem, count, names, cdecl):
        if name in names:
            raise ParseError("duplicate name %s" % name)
        names.add(name)
        self.w(depth, "/// `%s` @ byte 0x%x, %s" % (cdecl, off // 8,
                                                     "flexible" if count == 0 else "%d elements" % count))
        self.w(depth, "pub const %s: Array = Array::new(0x%x, 0x%x, %d);" % (rust_ident(name), off, elem, count))

    def top(self, tname):
        kind, members = self.L.p.defs[tname]
        size = self.L.type_size(tname)
        if size % 8:
            raise ParseError("%s: size %d bits is not whole bytes" % (tname, size))
        self.w(0, "/// `%s mlx5_ifc_%s_bits`: %d bytes." % (kind, tname, size // 8))
        self.w(0, "pub mod %s {" % rust_ident(tname))
        self.w(1, "#[allow(unused_imports)]")
        self.w(1, "use crate::fields::{Array, Field};")
        self.w(1, "/// Size in bytes.")
        self.w(1, "pub const SIZE: usize = 0x%x;" % (size // 8))
        self.table = []
        self.members(kind, members, 0, 1, {"SIZE", "FIELDS"}, tname not in NO_SUBMODULES)
        self.w(1, "/// Every top-level `Field` above with its header name, in layout order.")
        self.w(1, "pub const FIELDS: &[(&str, Field)] = &[")
        for n in self.table:
            self.w(2, '("%s", %s),' % (n, rust_ident(n)))
        self.w(1, "];")
        self.w(0, "}")
        self.w(0, "")


def dwdesc(off, bits):
    dw, b = divmod(off, 32)
    if bits < 32 and b + bits <= 32:
        hi = 31 - b
        lo = hi - bits + 1
        return ", DW%d bit %d" % (dw, hi) if bits == 1 else ", DW%d bits[%d:%d]" % (dw, hi, lo)
    return ", DW%d, %d bits" % (dw, bits)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src", help="kernel source tree (top directory)")
    ap.add_argument("-o", "--output", default=os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
        "..", "..", "crates", "mlx5-ifc", "src", "ifc.rs")))
    ap.add_argument("--kernel-version", help="override the version read from the tree's Makefile")
    a = ap.parse_args()

    ver = a.kernel_version
    if not ver:
        try:
            mk = open(os.path.join(a.src, "Makefile")).read()
            kv = dict(re.findall(r"^(VERSION|PATCHLEVEL|SUBLEVEL)\s*=\s*(\d+)", mk, re.M))
            ver = "%s.%s.%s" % (kv["VERSION"], kv["PATCHLEVEL"], kv["SUBLEVEL"])
        except (OSError, KeyError):
            ver = "unknown"
    shas = ["//   %s  %s" % (hashlib.sha256(open(os.path.join(a.src, rel), "rb").read()).hexdigest(), rel)
            for rel, _ in SOURCES]

    p = parse_sources(a.src)
    L = Layout(p)
    e = Emitter(L)
    for s in STRUCTS:
        if s not in p.defs:
            raise SystemExit("ifcgen: struct %s not found in the SOURCES" % s)
        e.want(s)
    body_start = len(e.out)
    i = 0
    while i < len(e.needed):  # grows while emitting (nested struct types)
        e.top(e.needed[i])
        i += 1
    modules = e.out[body_start:]
    e.out = e.out[:body_start]

    hdr = [
        "// @generated by tools/mlx5/ifcgen.py -- DO NOT EDIT.",
        "//",
        "// Source: Linux %s (Debian trixie linux-source-6.12), sha256 of the files read:" % ver,
    ] + shas + [
        "// Regenerate: tools/mlx5/ifcgen.py <linux-source-tree> -o crates/mlx5-ifc/src/ifc.rs",
        "// (the script's docstring shows how to fetch the tree; the struct list is at its top).",
        "//",
        "// One module per `mlx5_ifc_<name>_bits`: `SIZE` in bytes, one `Field` (bit offset, width) per",
        "// non-reserved field with the header's name, `Array` for arrays; a nested struct member has a",
        "// `Field` for its whole region plus a submodule of the same name holding its fields at offsets",
        "// from the start of the outer struct; nested unions only get the region (compose with",
        "// `Field::inner`). Offsets are in bits, as in the header's `reserved_at_<bit offset>` names.",
        "// A `X_high`/`X_low` dword pair also gets `X`: both dwords as one 64-bit field.",
        "",
        "#![allow(non_upper_case_globals, non_snake_case, dead_code, clippy::all)]",
        "",
    ]
    consts = []
    seen = set()
    for header, name in p.const_order:
        if name in seen or not any(name.startswith(pf) for pf in CONST_PREFIXES):
            continue
        seen.add(name)
        v = p.consts[name]
        if v < 0:
            continue
        ty = "u32" if v <= 0xffffffff else "u64"
        consts.append("/// `%s` (%s)\npub const %s: %s = 0x%x;" % (name, header, name, ty, v))
    for name in p.unresolved:
        if any(name.startswith(pf) for pf in CONST_PREFIXES):
            print("ifcgen: warning: cannot evaluate %s, not exported" % name, file=sys.stderr)
    text = "\n".join(hdr + ["// ---- constants (enum entries) ----", ""] + consts + ["",
                            "// ---- layouts ----", ""] + modules)
    text = text.rstrip("\n") + "\n"
    with open(a.output, "w") as f:
        f.write(text)
    # canonical formatting (skipped if rustfmt is not installed): rustfmt's default style whatever rustfmt.toml
    # lies above the output path (the workspace's has max_width = 120); `cargo fmt` skips the module
    # (`#[rustfmt::skip] mod ifc`), so the output is the same wherever it is written
    try:
        with tempfile.TemporaryDirectory() as cfg:
            with open(os.path.join(cfg, "rustfmt.toml"), "w") as f:
                f.write("max_width = 100\n")  # the default; the file only masks any other configuration
            subprocess.run(["rustfmt", "--edition", "2021", "--config-path", cfg, a.output], check=True)
    except FileNotFoundError:
        print("ifcgen: rustfmt not found, output left unformatted", file=sys.stderr)
    print("ifcgen: %d structs (%d requested), %d constants -> %s (%d lines)" % (
        len(e.needed), len(STRUCTS), len(consts), a.output, text.count("\n")))


if __name__ == "__main__":
    main()
