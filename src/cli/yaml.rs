//! YAML as kubectl reads a manifest, for every reader of what a pull
//! request applies.

/// The YAML documents of a manifest as kubectl reads them (sigs.k8s.io/yaml
/// over go-yaml, YAML 1.1, then JSON): `0644` is octal (420), and a number
/// without a fraction, `493.0`, is the integer JSON carries on (493). Read
/// as YAML 1.2 the first was no integer and the second a float, and a
/// `mode:` so written was passed over as if absent (a pull request setting
/// the generator's mode to `0644` planned as no change).
pub fn kube_yaml_docs(text: &str) -> Result<Vec<serde_json::Value>, serde_saphyr::Error> {
    let options = serde_saphyr::options! { legacy_octal_numbers: true };
    let mut docs: Vec<serde_json::Value> = serde_saphyr::from_multiple_with_options(text, options)?;
    docs.iter_mut().for_each(integral_numbers);
    Ok(docs)
}

/// Floats without a fraction made integers, as Go's JSON encoder writes
/// them (within 2^53, where a float is exact).
fn integral_numbers(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.007e15)
            {
                *v = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers),
        Value::Object(members) => members.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Numbers as kubectl reads a manifest (go-yaml's YAML 1.1, then
    /// JSON): `0644` is octal, `493.0` the integer 493; a quoted `"0644"`
    /// stays a string (Ignition then refuses it).
    #[test]
    fn numbers_are_read_as_kubectl_reads_them() {
        let docs =
            kube_yaml_docs("a: 0644\nb: 493.0\nc: 0o755\nd: \"0644\"\ne: 420\nf: 1.5\ng: 0x1ED\n")
                .unwrap();
        let d = &docs[0];
        assert_eq!(d["a"], 420);
        assert_eq!(d["b"], 493);
        assert_eq!(d["c"], 493);
        assert_eq!(d["d"], "0644");
        assert_eq!(d["e"], 420);
        assert_eq!(d["f"], 1.5);
        assert_eq!(d["g"], 493);
    }
}
