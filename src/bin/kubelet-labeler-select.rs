//! The fleet ISO's install-time selector (see `kubelet_labeler::node::fleet`):
//! std only, static, run by the live system before coreos-installer.

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::exit(kubelet_labeler::node::fleet::run(&args));
}
