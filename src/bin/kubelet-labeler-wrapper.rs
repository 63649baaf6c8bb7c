//! The boot-time wrapper systemd runs as kubelet.service's `ExecStart`
//! (see `units/`). std only: it is carried in MachineConfigs.
//! `kubelet-labeler-wrapper sync ...` is the day-2 label sync
//! (kubelet-labeler-sync.service): the same binary, so the derivation code
//! ships once.

#[global_allocator]
static ALLOC: kubelet_labeler::node::wrapper::bump::BumpAlloc =
    kubelet_labeler::node::wrapper::bump::BumpAlloc::new();

fn main() {
    // Past the `.bss` arena what is freed is freed: the sync runs for
    // minutes and reads an answer per try, and at boot the node rules'
    // template data (a copy of what a block matched, as large as a pod's
    // features.d file per term that walks it) is given back after each
    // block instead of piling up per rule. A start that stays in the arena
    // (every start without rules) allocates as before.
    ALLOC.free_from_now();
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|a| a == "sync") {
        std::process::exit(kubelet_labeler::node::sync::start::node_main(&args[1..]));
    }
    std::process::exit(kubelet_labeler::node::wrapper::boot::run(&args));
}
