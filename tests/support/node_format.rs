//! A render as the release of node format 3 wrote it, for the tests of
//! `plan` across a version upgrade.

use kubelet_labeler::cli::render::{encoding, layout, machineconfig::to_yaml};
use kubelet_labeler::node::contract::{NODE_FORMAT, WRAPPER_FORMAT_MARK, WRAPPER_USAGE_HEAD};

use std::path::Path;

/// Rewrites the MachineConfigs of the render in `dir` as node format 3's
/// release rendered them: their text files stamped `+node.3`, their wrapper
/// a static ELF whose usage line says `; node format 3`. Each file of
/// MachineConfigs becomes a JSON `List` when `json`, else stays YAML; a file
/// of no MachineConfig (the pool, the kustomization) stays as it is.
pub fn as_node_format_3(dir: &Path, json: bool) {
    let mut old_wrapper =
        super::elf::foreign_static_elf(kubelet_labeler::cli::render::arch::Arch::X86_64);
    old_wrapper.extend_from_slice(
        format!("{WRAPPER_USAGE_HEAD}--unit NAME]{WRAPPER_FORMAT_MARK}3").as_bytes(),
    );
    let ours = format!("+node.{NODE_FORMAT}");
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let mut mcs = layout::machineconfigs_from_yaml(&text, "mc").unwrap_or_default();
        if mcs.is_empty() {
            continue;
        }
        for mc in &mut mcs {
            for f in mc["spec"]["config"]["storage"]["files"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                let bytes = layout::decode_data_url(
                    f["contents"]["source"].as_str().unwrap(),
                    f["contents"]["compression"].as_str(),
                )
                .unwrap();
                let bytes = if f["path"]
                    .as_str()
                    .unwrap()
                    .starts_with("/usr/local/bin/kubelet-labeler-wrapper")
                {
                    old_wrapper.clone()
                } else {
                    String::from_utf8(bytes)
                        .unwrap()
                        .replace(&ours, "+node.3")
                        .into_bytes()
                };
                let url = encoding::data_url(&bytes);
                f["contents"] =
                    serde_json::json!({"source": url.source, "compression": url.compression});
            }
        }
        if json {
            std::fs::remove_file(&p).unwrap();
            std::fs::write(
                p.with_extension("json"),
                serde_json::json!({"kind": "List", "items": mcs}).to_string(),
            )
            .unwrap();
            let name = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_string();
            let json_name = name(&p.with_extension("json"));
            super::relist_kustomization(dir, &[&json_name], &[&name(&p)]);
        } else {
            let docs: Vec<String> = mcs.iter().map(|mc| to_yaml(mc).unwrap()).collect();
            std::fs::write(&p, docs.join("---\n")).unwrap();
        }
    }
}
