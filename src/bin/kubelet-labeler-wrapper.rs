//! The boot-time wrapper systemd runs as kubelet.service's `ExecStart`.
fn main() {
    todo!()
}
