//! One rule for turning a TOML table of controller settings into the `(key, text)` pairs that
//! controllers read, shared by the server (`[controller.settings]`) and the simulator (a
//! `[[controller]]`'s `settings`), so both accept the same files.
//!
//! The rule, value by value:
//!
//! * a string stays as written (`shares = "1,3"` → `1,3`);
//! * an integer, a float or a boolean becomes its usual Rust text (`-3`, `0.01`, `1` for `1.0`,
//!   `true`); a date-time its TOML text;
//! * an array of those becomes its items' texts joined with `,` (`shares = [1, 3.5]` → `1,3.5`),
//!   the list form the controllers' list getters split;
//! * a table, or an array holding an array or a table, is rejected with an error naming the key:
//!   settings are flat `key = value` pairs, and a nested value has no single text form.
//!
//! Every bad key is reported, not just the first.

/// A setting whose value has no text form (a table, or a list holding lists or tables).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct SettingError {
    /// The setting's key.
    pub key: String,
    /// Why its value was rejected.
    pub reason: &'static str,
}

/// The text of one setting's value under the module's rule.
///
/// # Errors
/// Why the value has no text form: it is a table, or an array holding an array or a table.
pub fn setting_text(v: &toml::Value) -> Result<String, &'static str> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(n) => Ok(n.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        toml::Value::Datetime(d) => Ok(d.to_string()),
        toml::Value::Array(items) => items
            .iter()
            .map(|item| match item {
                toml::Value::Array(_) | toml::Value::Table(_) => {
                    Err("nested arrays and tables are not allowed in a list")
                }
                scalar => setting_text(scalar),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|texts| texts.join(",")),
        toml::Value::Table(_) => Err("a table is not a setting value (use key = value pairs)"),
    }
}

/// The settings of a TOML table (a `toml::Table`, or any map of keys to values) as `(key, text)`
/// pairs in the table's order, under the module's rule.
///
/// # Errors
/// One [`SettingError`] per key whose value has no text form, in the table's order.
pub fn settings_from_toml<'a>(
    table: impl IntoIterator<Item = (&'a String, &'a toml::Value)>,
) -> Result<Vec<(String, String)>, Vec<SettingError>> {
    let mut pairs = Vec::new();
    let mut bad = Vec::new();
    for (key, v) in table {
        match setting_text(v) {
            Ok(text) => pairs.push((key.clone(), text)),
            Err(reason) => bad.push(SettingError {
                key: key.clone(),
                reason,
            }),
        }
    }
    if bad.is_empty() { Ok(pairs) } else { Err(bad) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn scalars_and_lists_become_text() {
        let t = table(
            r#"
            ints = [1, 5]
            mixed = [1, 3.5, "x", true]
            n = -3
            on = true
            rate = 0.01
            shares = "1,2"
            whole = 1.0
            when = 1979-05-27T07:32:00Z
            "#,
        );
        let pairs = settings_from_toml(&t).unwrap();
        let want = [
            ("ints", "1,5"),
            ("mixed", "1,3.5,x,true"),
            ("n", "-3"),
            ("on", "true"),
            ("rate", "0.01"),
            ("shares", "1,2"),
            ("when", "1979-05-27T07:32:00Z"),
            ("whole", "1"),
        ];
        assert_eq!(
            pairs,
            want.map(|(k, v)| (k.to_string(), v.to_string())).to_vec()
        );
        assert_eq!(settings_from_toml(&toml::Table::new()).unwrap(), vec![]);
    }

    #[test]
    fn nested_values_are_rejected_naming_every_key() {
        let t = table(
            r#"
            fine = 1
            grid = [[1, 2], [3]]
            rows = [{ a = 1 }]
            [shares]
            a = 1
            "#,
        );
        let errs = settings_from_toml(&t).unwrap_err();
        let keys: Vec<&str> = errs.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["grid", "rows", "shares"]);
        assert_eq!(
            errs[2].to_string(),
            "shares: a table is not a setting value (use key = value pairs)"
        );
        assert_eq!(
            errs[0].to_string(),
            "grid: nested arrays and tables are not allowed in a list"
        );
    }

    #[test]
    fn any_map_of_values_is_accepted() {
        let mut m = std::collections::BTreeMap::new();
        m.insert(
            "ks".to_string(),
            toml::Value::Array(vec![1.into(), 16.into()]),
        );
        assert_eq!(
            settings_from_toml(&m).unwrap(),
            vec![("ks".to_string(), "1,16".to_string())]
        );
    }
}
