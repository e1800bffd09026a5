"""vrnic's test-bench harness (python3 stdlib only, Debian 12's 3.11).

Entry points (executables that put this package's parent on sys.path and call a main()):
  qemu/fetch      -> fetch.main       fill the cache: QEMU, the guest kernel + initramfs, dev-root, guest programs
  qemu/launch     -> launch.main      boot guests, each with its own vrnic server
  guest-tests/run -> run.cli.main     the guest scenarios (registry in run/registry.py)
Modules: common (paths, cache, output), debian (private apt, .deb unpacking), kernel (vmlinux, modules),
initramfs (the guest's base initramfs), guestbin (guest-tests/src programs), cpio (the per-run overlay),
qemu (Server, Guest, accelerator), topology (fabric + out-of-band link between guests).
"""
