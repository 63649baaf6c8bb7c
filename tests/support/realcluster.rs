//! The real kubelet, kube-apiserver and etcd of `../shared/tools/realcluster`
//! (see its README): one cluster on loopback for the whole test binary, and
//! node trees whose `kubelet.service` a real `systemd --user` runs through
//! our wrapper into the real kubelet, in a private mount namespace.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

pub fn tools_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/realcluster")
}

/// Why the real programs cannot run here, if they cannot (after the skip is
/// said; under CI the test fails instead: CI has root and ../shared, and
/// must run these tests).
pub fn unavailable() -> Option<String> {
    let tools = tools_dir();
    let why = if !tools.join("up.sh").is_file() {
        Some(format!(
            "{} is absent (the real kubelet and API server)",
            tools.display()
        ))
    } else if !Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n")
    {
        Some("not root (the real kubelet needs a private mount namespace)".to_string())
    } else {
        None
    };
    if let Some(w) = &why {
        super::skipped::skipped(&format!("real kubelet/API server tests: {w}"));
        return why;
    }
    let programs = [
        "curl",
        "openssl",
        "xz",
        "python3",
        "ss",
        "unshare",
        "/lib/systemd/systemd",
    ];
    programs
        .into_iter()
        .find(|p| !super::skipped::need(p))
        .map(|p| format!("{p} is missing"))
}

/// A running etcd + kube-apiserver (up.sh), stopped at process exit.
pub struct Cluster {
    pub dir: PathBuf,
    pub api: String,
    /// kubelet, fakecri (unpacked by unpack.sh).
    pub bin: PathBuf,
    pub up_secs: f64,
}

static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
static DOWN_DIR: OnceLock<PathBuf> = OnceLock::new();

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> i32;
}

extern "C" fn stop_cluster() {
    if let Some(dir) = DOWN_DIR.get() {
        let _ = Command::new("bash")
            .arg(tools_dir().join("down.sh"))
            .arg(dir)
            .output();
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// A free loopback port (and, for etcd, its peer port `+10` too).
fn free_port(with_peer: bool) -> u16 {
    for _ in 0..50 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = l.local_addr().unwrap().port();
        if p > 65000 {
            continue;
        }
        if !with_peer || std::net::TcpListener::bind(("127.0.0.1", p + 10)).is_ok() {
            return p;
        }
    }
    panic!("no free loopback port");
}

/// Every node name the tests register, each area's: the one cluster
/// starts with a client certificate for each.
fn every_node() -> Vec<&'static str> {
    [
        &crate::real_chain::NODES[..],
        &crate::real_chain_sync::NODES,
        &crate::real_sync::NODES,
        &crate::real_validate::NODES,
        &crate::plan::NODES,
        &crate::plan_tolerations::NODES,
    ]
    .concat()
}

/// Held while a real kubelet runs: register.sh's listens on fixed ports, and
/// two user managers of one user, each running a kubelet.service, were seen
/// to stop each other's kubelet (a SIGTERM ~0.2 s after start) even in
/// separate cgroups.
pub fn one_kubelet_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The cluster of the test binary, started on first use.
pub fn cluster() -> &'static Cluster {
    let c = CLUSTER.get_or_init(|| {
        let nodes = every_node();
        let bin = Command::new("bash")
            .arg(tools_dir().join("unpack.sh"))
            .output()
            .map_err(|e| format!("running unpack.sh: {e}"))?;
        if !bin.status.success() {
            return Err(format!(
                "unpack.sh: {}",
                String::from_utf8_lossy(&bin.stderr)
            ));
        }
        let bin = PathBuf::from(String::from_utf8_lossy(&bin.stdout).trim());
        let dir = PathBuf::from(
            String::from_utf8(
                Command::new("mktemp")
                    .args(["-d", "/tmp/kubelet-labeler-rc.XXXXXX"])
                    .output()
                    .unwrap()
                    .stdout,
            )
            .unwrap()
            .trim(),
        );
        let api_port = free_port(false);
        let etcd_port = free_port(true);
        let t = Instant::now();
        let out = Command::new("bash")
            .arg(tools_dir().join("up.sh"))
            .env("RC_DIR", &dir)
            .env("NODE_NAMES", nodes.join(" "))
            .env("API_PORT", api_port.to_string())
            .env("ETCD_PORT", etcd_port.to_string())
            .env("TTL", "1500")
            .output()
            .map_err(|e| format!("running up.sh: {e}"))?;
        let up_secs = t.elapsed().as_secs_f64();
        let _ = DOWN_DIR.set(dir.clone());
        // SAFETY: registers a plain extern "C" fn with no captured state.
        unsafe { atexit(stop_cluster) };
        if !out.status.success() {
            return Err(format!(
                "up.sh failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        eprintln!("real cluster up in {up_secs:.2} s ({})", dir.display());
        Ok(Cluster {
            api: format!("https://127.0.0.1:{api_port}"),
            dir,
            bin,
            up_secs,
        })
    });
    match c {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    }
}

impl Cluster {
    /// curl with the cluster's CA and `who`'s client certificate
    /// (`admin`, or `node-<name>`).
    fn curl_as(&self, who: &str) -> Command {
        let pki = self.dir.join("pki");
        let mut c = Command::new("curl");
        c.args(["-sS", "-m", "10", "--cacert"])
            .arg(pki.join("ca.crt"))
            .arg("--cert")
            .arg(pki.join(format!("{who}.crt")))
            .arg("--key")
            .arg(pki.join(format!("{who}.key")));
        c
    }

    fn curl(&self) -> Command {
        self.curl_as("admin")
    }

    /// `GET` as the cluster admin: (HTTP status, body).
    pub fn get(&self, path: &str) -> (u16, String) {
        let out = self
            .curl()
            .args(["-w", "\n%{http_code}"])
            .arg(format!("{}{path}", self.api))
            .output()
            .expect("running curl");
        status_and_body(&out.stdout)
    }

    /// `method` on `path` as the cluster admin with `body` of
    /// `content_type`: (HTTP status, body).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &str,
    ) -> (u16, String) {
        self.send(self.curl(), method, path, content_type, body)
    }

    /// `curl` sending `body` to `path` with `method`: (HTTP status, body).
    fn send(
        &self,
        mut curl: Command,
        method: &str,
        path: &str,
        content_type: &str,
        body: &str,
    ) -> (u16, String) {
        let mut child = curl
            .args(["-X", method, "-H"])
            .arg(format!("Content-Type: {content_type}"))
            .args(["--data-binary", "@-", "-w", "\n%{http_code}"])
            .arg(format!("{}{path}", self.api))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("running curl");
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(body.as_bytes())
            .unwrap();
        let out = child.wait_with_output().expect("running curl");
        status_and_body(&out.stdout)
    }

    /// The Node as stored, if it exists.
    pub fn node(&self, name: &str) -> Option<serde_json::Value> {
        let (code, body) = self.get(&format!("/api/v1/nodes/{name}"));
        (code == 200).then(|| serde_json::from_str(&body).expect("a Node as JSON"))
    }

    /// POST a Node with the node's own certificate (`dry_run`: admitted and
    /// validated, not stored): (HTTP status, body).
    pub fn post_node_as_node(
        &self,
        name: &str,
        node: &serde_json::Value,
        dry_run: bool,
    ) -> (u16, String) {
        let path = format!("/api/v1/nodes{}", if dry_run { "?dryRun=All" } else { "" });
        self.send(
            self.curl_as(&format!("node-{name}")),
            "POST",
            &path,
            "application/json",
            &node.to_string(),
        )
    }

    /// Delete a Node (and its Lease), so the next kubelet start creates it.
    pub fn delete_node(&self, name: &str) {
        for path in [
            format!("/api/v1/nodes/{name}"),
            format!("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}"),
        ] {
            let _ = self
                .curl()
                .args(["-o", "/dev/null", "-X", "DELETE"])
                .arg(format!("{}{path}", self.api))
                .output();
        }
    }

    pub fn kubeconfig(&self, node: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("node-{node}.kubeconfig")))
            .expect("the node's kubeconfig (is it in the cluster's node list?)")
    }
}

/// curl's output with `-w '\n%{http_code}'`: (HTTP status, body).
fn status_and_body(stdout: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(stdout);
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

/// A node's labels and taints as stored: (labels, taints as `key=value:Effect`).
pub fn labels_and_taints(node: &serde_json::Value) -> (BTreeMap<String, String>, Vec<String>) {
    let labels = node["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    let mut taints: Vec<String> = node["spec"]["taints"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| {
                    format!(
                        "{}={}:{}",
                        t["key"].as_str().unwrap_or_default(),
                        t["value"].as_str().unwrap_or_default(),
                        t["effect"].as_str().unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    taints.sort();
    (labels, taints)
}

/// Ports and paths of one node's kubelet, distinct per test.
pub struct KubeletSetup {
    pub port: u16,
    pub healthz_port: u16,
}

impl KubeletSetup {
    pub fn new() -> KubeletSetup {
        KubeletSetup {
            port: free_port(false),
            healthz_port: free_port(false),
        }
    }

    /// A KubeletConfiguration that runs here (cgroup v1 host, fake CRI at
    /// `sock`, loopback only), plus `extra` lines.
    pub fn config(&self, sock: &str, extra: &str) -> String {
        format!(
            "apiVersion: kubelet.config.k8s.io/v1beta1\n\
             kind: KubeletConfiguration\n\
             failCgroupV1: false\n\
             cgroupsPerQOS: false\n\
             enforceNodeAllocatable: [\"none\"]\n\
             cgroupDriver: cgroupfs\n\
             failSwapOn: false\n\
             address: 127.0.0.1\n\
             port: {}\n\
             readOnlyPort: 0\n\
             healthzBindAddress: 127.0.0.1\n\
             healthzPort: {}\n\
             containerRuntimeEndpoint: unix://{sock}\n\
             authentication:\n  anonymous: {{enabled: false}}\n  webhook: {{enabled: false}}\n\
             authorization:\n  mode: AlwaysAllow\n\
             registerNode: true\n{extra}",
            self.port, self.healthz_port
        )
    }
}

impl Default for KubeletSetup {
    fn default() -> Self {
        Self::new()
    }
}

/// What one run of a node tree under the user manager gave.
pub struct ChainRun {
    /// kubelet's stdout and stderr, the wrapper's line included (the unit's
    /// journal, sent to a file: no journald here).
    pub journal: String,
    /// `systemctl show` of kubelet.service at the end.
    pub props: BTreeMap<String, String>,
    /// What the steps printed (and the script's stderr).
    pub output: String,
    pub secs: f64,
}

impl ChainRun {
    pub fn prop(&self, name: &str) -> &str {
        self.props.get(name).map(String::as_str).unwrap_or("")
    }

    /// The wrapper's lines and kubelet's errors, for a failure message.
    pub fn summary(&self) -> String {
        let lines: Vec<&str> = self
            .journal
            .lines()
            .filter(|l| l.starts_with("kubelet-labeler: ") || l.starts_with('E'))
            .collect();
        format!(
            "journal (wrapper lines, kubelet errors):\n{}\nprops: {:?}\nsteps: {}",
            lines.join("\n"),
            self.props,
            self.output
        )
    }

    /// The wrapper's journal lines, in order.
    pub fn wrapper_lines(&self) -> Vec<&str> {
        self.journal
            .lines()
            .filter(|l| l.starts_with("kubelet-labeler: "))
            .collect()
    }
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The node's directories the manager sees through overlays of `tree`
/// (each lower: the host's).
const OVERLAID: [&str; 5] = ["etc", "usr/local/bin", "usr/bin", "usr/libexec", "var/lib"];

/// Run `tree` as a node: in a private mount namespace, `tree`'s `/etc`,
/// `/usr/local/bin`, `/usr/bin`, `/usr/libexec` and `/var/lib` are laid over the host's,
/// `/run` and `/var/log` are fresh tmpfs, the six sysctls kubelet rewrites
/// are plain files (ns-wrap.sh's list), and a real `systemd --user` loads
/// units from `/etc/systemd/system` and its generator directory, running
/// the tree's generators. `steps` is shell run with the manager up; it may
/// use `$API`, `$NODE`, `$LOG` and the functions `wait_log PATTERN SECS`,
/// `node_code` (HTTP status of GET Node), `wait_node SECS`, `restarts`.
/// Afterwards kubelet.service and crio.service are stopped.
pub fn run_chain(
    cluster: &Cluster,
    scratch: &Path,
    tree: &Path,
    node: &str,
    steps: &str,
) -> ChainRun {
    let _serial = one_kubelet_at_a_time();
    let log = scratch.join("kubelet.journal");
    let _ = std::fs::remove_file(&log);
    let mut s = String::from("set -u\n");
    for (i, d) in OVERLAID.iter().enumerate() {
        let upper = tree.join(d);
        let work = scratch.join(format!("overlay-work-{i}"));
        std::fs::create_dir_all(&upper).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        s += &format!(
            "mount -t overlay overlay -o lowerdir=/{d},upperdir={},workdir={} /{d} || exit 90\n",
            sh_quote(&upper.display().to_string()),
            sh_quote(&work.display().to_string())
        );
    }
    s += "mount -t tmpfs tmpfs /run || exit 91\nmount -t tmpfs tmpfs /var/log || exit 91\n\
          mkdir -p /run/systemd/system /run/fakesys\n\
          for f in vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops \
          kernel/keys/root_maxkeys kernel/keys/root_maxbytes; do\n\
            n=$(echo $f | tr / _); cat /proc/sys/$f > /run/fakesys/$n && \
          mount --bind /run/fakesys/$n /proc/sys/$f || exit 92\ndone\n";
    // A cgroup of its own for the manager (name=systemd on cgroup v1, the
    // unified one on v2): user managers started from one cgroup share their
    // `app.slice/kubelet.service`, and stopping one unit would kill every
    // manager's kubelet.
    let cg_name = format!(
        "kubelet-labeler-test-{}",
        scratch.file_name().unwrap().to_string_lossy()
    );
    s += &format!(
        "if [ -d /sys/fs/cgroup/systemd ]; then H=/sys/fs/cgroup/systemd; \
         HOME_CG=$(sed -n 's/^[0-9]*:name=systemd://p' /proc/self/cgroup); \
         else H=/sys/fs/cgroup; HOME_CG=$(sed -n 's/^0:://p' /proc/self/cgroup); fi\n\
         CG=$H/{cg_name}\nmkdir -p \"$CG\" && echo $$ > \"$CG/cgroup.procs\" || exit 93\n"
    );
    let pki = cluster.dir.join("pki");
    s += &format!(
        "export XDG_RUNTIME_DIR={rt} XDG_CONFIG_HOME={cfg}\nmkdir -p \"$XDG_RUNTIME_DIR\" \"$XDG_CONFIG_HOME\"\n\
         chmod 700 \"$XDG_RUNTIME_DIR\"\n\
         API={api} NODE={node} LOG={log}\n\
         curl_admin() {{ curl -sS -m 5 --cacert {pki}/ca.crt --cert {pki}/admin.crt --key {pki}/admin.key \"$@\"; }}\n\
         node_code() {{ curl_admin -o /dev/null -w '%{{http_code}}' \"$API/api/v1/nodes/$NODE\" 2>/dev/null; }}\n\
         wait_log() {{ local end=$(( $(date +%s) + $2 )); until grep -q -- \"$1\" \"$LOG\" 2>/dev/null; do \
         [ $(date +%s) -ge $end ] && {{ echo \"timeout waiting for $1\"; return 1; }}; sleep 0.05; done; }}\n\
         wait_node() {{ local end=$(( $(date +%s) + $1 )); until [ \"$(node_code)\" = 200 ]; do \
         [ $(date +%s) -ge $end ] && {{ echo \"timeout waiting for Node $NODE\"; return 1; }}; sleep 0.05; done; }}\n\
         restarts() {{ systemctl --user show -p NRestarts --value kubelet.service; }}\n\
         SYSTEMD_UNIT_PATH=/etc/systemd/system:$XDG_RUNTIME_DIR/systemd/generator \
         SYSTEMD_GENERATOR_PATH=/etc/systemd/system-generators \
         /lib/systemd/systemd --user >{scratch}/manager.log 2>&1 &\npid=$!\n\
         for i in $(seq 200); do st=$(systemctl --user is-system-running 2>/dev/null); \
         case \"$st\" in running|degraded) break;; esac; sleep 0.05; done\n",
        rt = sh_quote(&scratch.join("xdg-runtime").display().to_string()),
        cfg = sh_quote(&scratch.join("xdg-config").display().to_string()),
        api = sh_quote(&cluster.api),
        node = sh_quote(node),
        log = sh_quote(&log.display().to_string()),
        pki = sh_quote(&pki.display().to_string()),
        scratch = sh_quote(&scratch.display().to_string()),
    );
    s += steps;
    s += "\nsystemctl --user show -p ActiveState -p SubState -p Result -p NRestarts \
          -p ExecMainStatus -p DropInPaths -p FragmentPath kubelet.service > \"$LOG.props\"\n\
          timeout 30 systemctl --user stop kubelet.service crio.service\n\
          kill -9 $pid; wait $pid 2>/dev/null\n\
          echo $$ > \"$H$HOME_CG/cgroup.procs\"\n\
          for p in $(cat $(find \"$CG\" -name cgroup.procs)); do kill -9 $p 2>/dev/null; done\n\
          sleep 0.2; find \"$CG\" -depth -type d -exec rmdir {} + 2>/dev/null\n";
    let path = scratch.join("chain.sh");
    std::fs::write(&path, &s).unwrap();
    let t = Instant::now();
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "bash"])
        .arg(&path)
        .output()
        .expect("running unshare");
    let secs = t.elapsed().as_secs_f64();
    let props = std::fs::read_to_string(scratch.join("kubelet.journal.props"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ChainRun {
        journal: std::fs::read_to_string(&log).unwrap_or_default(),
        props,
        output: format!(
            "{}{}\nmanager log:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(scratch.join("manager.log")).unwrap_or_default()
        ),
        secs,
    }
}
