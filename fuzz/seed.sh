#!/usr/bin/env bash
# Seed the fuzz corpora (fuzz/corpus/TARGET, not committed) from real inputs:
# the MCO kubelet templates in ../shared/fixtures/mco (unit files, kubelet
# configs, their ExecStart words), the units/ drop-ins, the coreos-installer
# fixture ISOs, embed areas and configs, the example MachineConfigs' Ignition,
# an ISO made by iso/make-test-iso.sh, and the compact forms of examples/rules.
set -euo pipefail
cd "$(dirname "$0")"
repo=$PWD/..
mco=$repo/../shared/fixtures/mco
coi=$repo/../shared/fixtures/coreos-installer
for t in unit_file kubelet_flags kubelet_config iso_reader rules_compact ignition_check boot_eval; do
  mkdir -p "corpus/$t"
done
if [ -d "$mco" ]; then
  python3 - "$mco" <<'PY'
import hashlib, pathlib, re, sys, yaml
def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    name = hashlib.sha1(data).hexdigest()
    pathlib.Path(f"corpus/{target}/{name}").write_bytes(data)
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.yaml")):
    text = f.read_text()
    try:
        doc = yaml.safe_load(re.sub(r"{{[^}]*}}", "x", text))
    except yaml.YAMLError:
        doc = None
    contents = None
    if isinstance(doc, dict):
        contents = doc.get("contents")
        if isinstance(contents, dict):
            contents = contents.get("inline")
        if contents is None:
            for d in doc.get("dropins") or []:
                contents = d.get("contents")
    body = contents if isinstance(contents, str) else text
    if "__units__" in f.name:
        put("unit_file", body)
        for m in re.finditer(r"ExecStart=(?:[-@:+!]*)((?:[^\n]*\\\n)*[^\n]*)", body):
            words = m.group(1).replace("\\\n", " ").split()
            put("kubelet_flags", "\0".join(["node-role.kubernetes.io/worker=,a=b"] + words[1:]))
    elif "kubelet" in f.name and "__files__" in f.name:
        put("kubelet_config", body)
PY
else
  echo "seed.sh: $mco missing; MCO seeds skipped" >&2
fi
for f in "$repo"/units/*/*; do install -m 644 "$f" corpus/unit_file/; done
printf 'a=b,node-role.kubernetes.io/worker=\0--node-labels=x=y\0--register-with-taints=k=v:NoSchedule\0--cpu-cfs-quota\0false' \
  > corpus/kubelet_flags/argv
printf 'k=v:NoSchedule,k2:NoExecute' > corpus/kubelet_flags/taints
printf '{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","registerWithTaints":[{"key":"k","value":"v","effect":"NoSchedule"}]}' \
  > corpus/kubelet_config/json
printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nregisterWithTaints:\n- key: k\n  effect: NoSchedule\n' > corpus/kubelet_config/yaml
printf '%s' '%YAML 1.1
%TAG !k! tag:yaml.org,2002:
--- # c
apiVersion: kubelet.config.k8s.io/v1beta1
kind: !!str KubeletConfiguration
e: &e {effect: NoSchedule}
registerWithTaints: !k!seq
- <<: *e
  key: >-
    k
  value: "\x76\u0031"
- [a: b]
- key: |2+
    x

  effect: *e
...
--- [
' > corpus/kubelet_config/constructs
if [ -d "$coi" ]; then
  xz -dc "$coi/synthetic-coreos-base.iso.xz" > corpus/iso_reader/base.iso
  xz -dc "$coi/synthetic-coreos-embedded-pointer.iso.xz" > corpus/iso_reader/pointer.iso
  install -m 644 "$coi"/embed-area-*.bin corpus/iso_reader/
  install -m 644 "$coi"/*.ign corpus/ignition_check/
fi
# Every rendered config of the example, at each version it is written in.
python3 - "$repo/machineconfigs" <<'PY'
import glob, json, sys, yaml
for f in sorted(glob.glob(sys.argv[1] + "/*.yaml")):
    doc = yaml.safe_load(open(f))
    config = (doc or {}).get("spec", {}).get("config")
    if config:
        for v in ("3.2.0", "3.4.0", "3.5.0"):
            config["ignition"]["version"] = v
            name = f.rsplit("/", 1)[1] + "." + v
            open(f"corpus/ignition_check/{name}", "w").write(json.dumps(config))
PY
if command -v xorriso >/dev/null; then
  bash "$repo/iso/make-test-iso.sh" corpus/iso_reader/made.iso
fi
printf 'v1' > corpus/rules_compact/v1
# An old version's header, and a rule with a compiled regexp and template.
printf 'KLR1,0' > corpus/rules_compact/klr1
printf '%s' 'KLR3,1,r,0,T1:r0:n1:oF2:3:pci6:device2:a0:n1:oF1:5:classt3:=x~0A0:,0,~N,0,1,pci.device,1,class,InRegexp,2,RBc0c3S6:c0C1:48:2:EM,RC2:78:0:32:0:C2:86:0:32:0:M,~N,0' \
  > corpus/rules_compact/compiled
# Rule sets and facts in boot_eval's line format (see its header): a GPU
# rule with a template and a taint, rule.matched read back, a heavy range.
printf '%s\n' 'R gpu' 'T {{ range .pci.device }}v-{{ .vendor }}=true\n{{ end }}' \
  'X example.com/gpu=true:NoSchedule' 'M pci.device' 'E class InRegexp ^03' 'E vendor In 10de' \
  'F inst pci.device class=0300,vendor=10de,device=2330' 'F inst pci.device class=0200,vendor=8086' \
  > corpus/boot_eval/gpu
printf '%s\n' 'R a' 'V big=xxxxxxxx' 'W v={{ range 50 }}a{{ end }}' 'M cpu.cpuid' 'N Exists' \
  'R b' 'L b=1' 'A' 'M rule.matched' 'E v InRegexp a+b|(a|aa)*c' 'F flag cpu.cpuid AVX,SSE4' \
  > corpus/boot_eval/backref
printf '%s\n' 'R r' 'T {{ range 30000 }}{{ end }}' 'M cpu.cpuid' 'N Exists' 'F flag cpu.cpuid AVX' \
  > corpus/boot_eval/range
# The compact forms `render` makes of the example rules (the CLI from the
# tests' build; skipped with a word when it is not built).
cli=${CARGO_TARGET_DIR:-$repo/target}/debug/kubelet-labeler
if [ -x "$cli" ]; then
  for r in "$repo"/examples/rules/*.yaml; do
    tree=$(mktemp -d)
    "$cli" render dropins --root "$tree" --rules "$r" >/dev/null
    grep -rhoP 'KUBELET_LABELER_NODE_RULES=\K[^"]*' "$tree/etc" \
      > "corpus/rules_compact/$(basename "$r" .yaml)"
    rm -rf "$tree"
  done
else
  echo "seed.sh: $cli not built; example rules not seeded" >&2
fi
ls corpus | while read -r t; do echo "seed.sh: $t: $(ls "corpus/$t" | wc -l) inputs" >&2; done
