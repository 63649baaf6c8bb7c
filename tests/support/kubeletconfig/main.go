// kubeletconfig reads kubelet config files the way kubelet 1.36 does
// (cmd/kubelet/app/server.go loadConfigFile and mergeKubeletConfigurations,
// pkg/kubelet/kubeletconfig/util/codec, apimachinery's JSON/YAML serializer)
// and prints the registerWithTaints kubelet ends up with. It reuses the
// libraries kubelet vendors (sigs.k8s.io/yaml over go-yaml v2,
// sigs.k8s.io/json, evanphx/json-patch) from Debian's packages; the glue
// between them follows kubelet's code path step by step. Built offline in
// GOPATH mode by tests/kubelet_config_oracle.rs.
//
// Input on stdin: a JSON array of cases {"config": TEXT|null, "dropins":
// [TEXT...]} (drop-ins in the order kubelet walks them). Output: a JSON
// array, per case {"taints": [{"key","value","effect"}...]} or {"error": WHY}.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"unicode"

	jsonpatch "github.com/evanphx/json-patch"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

type taint struct {
	Key       string           `json:"key"`
	Value     string           `json:"value,omitempty"`
	Effect    string           `json:"effect"`
	TimeAdded *json.RawMessage `json:"timeAdded,omitempty"`
}

// the fields of KubeletConfiguration v1beta1 these cases use
type config struct {
	Kind               string  `json:"kind,omitempty"`
	APIVersion         string  `json:"apiVersion,omitempty"`
	FailCgroupV1       *bool   `json:"failCgroupV1,omitempty"`
	MaxPods            int32   `json:"maxPods,omitempty"`
	RegisterWithTaints []taint `json:"registerWithTaints,omitempty"`
}

type input struct {
	Config  *string  `json:"config"`
	Dropins []string `json:"dropins"`
}

type result struct {
	Taints []taint `json:"taints,omitempty"`
	Error  string  `json:"error,omitempty"`
}

const wantAPIVersion, wantKind = "kubelet.config.k8s.io/v1beta1", "KubeletConfiguration"

// isJSON: apimachinery's utilyaml.IsJSONBuffer, which picks the serializer.
func isJSON(data []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeftFunc(data, unicode.IsSpace), []byte("{"))
}

// interpret: the serializer's SimpleMetaFactory.Interpret (encoding/json).
func interpret(j []byte) (string, string, error) {
	var tm struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
	}
	if err := json.Unmarshal(j, &tm); err != nil {
		return "", "", fmt.Errorf("couldn't get version/kind: %v", err)
	}
	if strings.Count(tm.APIVersion, "/") > 1 {
		return "", "", fmt.Errorf("unexpected GroupVersion string: %v", tm.APIVersion)
	}
	return tm.APIVersion, tm.Kind, nil
}

// loadConfig: codec.DecodeKubeletConfiguration (strict, then lenient).
func loadConfig(data []byte) ([]taint, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("kubelet config file was empty")
	}
	j := data
	yamlIn := !isJSON(data)
	if yamlIn {
		var err error
		if j, err = yaml.YAMLToJSON(data); err != nil {
			return nil, err
		}
	}
	av, kind, err := interpret(j)
	if err != nil {
		return nil, err
	}
	if kind == "" {
		return nil, fmt.Errorf("Object 'Kind' is missing")
	}
	if av != wantAPIVersion || kind != wantKind {
		return nil, fmt.Errorf("no kind %q is registered for version %q", kind, av)
	}
	var strict config
	strictErrs, err := kjson.UnmarshalStrict(j, &strict)
	if err != nil {
		return nil, fmt.Errorf("failed to decode: %v", err)
	}
	if yamlIn {
		if _, err := yaml.YAMLToJSONStrict(data); err != nil {
			strictErrs = append(strictErrs, err)
		}
	}
	if len(strictErrs) == 0 {
		return strict.RegisterWithTaints, nil
	}
	var lenient config
	if err := kjson.UnmarshalCaseSensitivePreserveInts(j, &lenient); err != nil {
		return nil, fmt.Errorf("failed lenient decoding: %v", strictErrs)
	}
	return lenient.RegisterWithTaints, nil
}

// loadDropin: codec.DecodeKubeletConfigurationIntoJSON (strict, into
// Unstructured) and the apiVersion/kind check of mergeKubeletConfigurations.
func loadDropin(data []byte) ([]byte, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("kubelet config file was empty")
	}
	j := data
	yamlIn := !isJSON(data)
	if yamlIn {
		var err error
		if j, err = yaml.YAMLToJSON(data); err != nil {
			return nil, err
		}
	}
	if _, _, err := interpret(j); err != nil {
		return nil, err
	}
	if yamlIn {
		if _, err := yaml.YAMLToJSONStrict(data); err != nil {
			return nil, fmt.Errorf("strict decoding error: %v", err)
		}
	}
	m := map[string]interface{}{}
	strictErrs, err := kjson.UnmarshalStrict(j, &m)
	if err != nil {
		return nil, err
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("strict decoding error: %v", strictErrs)
	}
	kind, _ := m["kind"].(string)
	av, _ := m["apiVersion"].(string)
	if kind == "" {
		return nil, fmt.Errorf("Object 'Kind' is missing")
	}
	if av != wantAPIVersion || kind != wantKind {
		return nil, fmt.Errorf("unknown apiVersion/kind: %s, Kind=%s", av, kind)
	}
	return json.Marshal(m)
}

var (
	qualifiedName = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	dnsSubdomain  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// validate: the registerWithTaints part of ValidateKubeletConfiguration
// (utiltaints.CheckTaintValidation, TimeAdded), plus the API server's
// required effect (an empty one passes kubelet, then every Node create is
// refused: the node never registers).
func validate(ts []taint) error {
	for _, t := range ts {
		name := t.Key
		if i := strings.LastIndex(name, "/"); i >= 0 {
			prefix := name[:i]
			name = name[i+1:]
			if prefix == "" || len(prefix) > 253 || !dnsSubdomain.MatchString(prefix) {
				return fmt.Errorf("invalid taint key %q", t.Key)
			}
		}
		if strings.Count(t.Key, "/") > 1 || name == "" || len(name) > 63 || !qualifiedName.MatchString(name) {
			return fmt.Errorf("invalid taint key %q", t.Key)
		}
		if t.Value != "" && (len(t.Value) > 63 || !qualifiedName.MatchString(t.Value)) {
			return fmt.Errorf("invalid taint value %q", t.Value)
		}
		switch t.Effect {
		case "NoSchedule", "PreferNoSchedule", "NoExecute":
		default:
			return fmt.Errorf("invalid taint effect %q", t.Effect)
		}
		if t.TimeAdded != nil {
			return fmt.Errorf("invalid configuration: taint.TimeAdded is not nil")
		}
	}
	return nil
}

func run(in input) ([]taint, error) {
	var taints []taint
	if in.Config != nil {
		var err error
		if taints, err = loadConfig([]byte(*in.Config)); err != nil {
			return nil, err
		}
	}
	if len(in.Dropins) > 0 {
		base, err := json.Marshal(config{RegisterWithTaints: taints})
		if err != nil {
			return nil, err
		}
		for _, d := range in.Dropins {
			dj, err := loadDropin([]byte(d))
			if err != nil {
				return nil, err
			}
			if base, err = jsonpatch.MergePatch(base, dj); err != nil {
				return nil, err
			}
		}
		var merged config
		if err := json.Unmarshal(base, &merged); err != nil {
			return nil, err
		}
		taints = merged.RegisterWithTaints
	}
	return taints, validate(taints)
}

func main() {
	var ins []input
	if err := json.NewDecoder(os.Stdin).Decode(&ins); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := make([]result, len(ins))
	for i, in := range ins {
		func() {
			defer func() {
				if r := recover(); r != nil {
					out[i] = result{Error: fmt.Sprint("panic: ", r)}
				}
			}()
			ts, err := run(in)
			if err != nil {
				out[i] = result{Error: err.Error()}
			} else {
				out[i] = result{Taints: append([]taint{}, ts...)}
			}
		}()
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}
