//! Controller settings: a flat `key = value` map read through typed getters.
//!
//! The server's `[controller.settings]` table and an experiment's controller table arrive here as
//! strings. Each controller reads what it knows with a default; [`Settings::finish`] then rejects
//! every key nobody read, so a typo is an error naming the key and the keys that exist.

use std::collections::BTreeMap;

use locus_common::ByteSize;

use super::ControlError;

/// Settings of one controller (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct Settings {
    controller: String,
    values: BTreeMap<String, String>,
    read: Vec<String>,
}

impl Settings {
    /// Settings for `controller` from `(key, value)` pairs.
    pub fn new(controller: &str, pairs: impl IntoIterator<Item = (String, String)>) -> Settings {
        Settings {
            controller: controller.to_string(),
            values: pairs.into_iter().collect(),
            read: Vec::new(),
        }
    }

    /// The controller these settings are for.
    pub fn controller(&self) -> &str {
        &self.controller
    }

    /// Whether `key` was given (without marking it read).
    pub fn has(&self, key: &str) -> bool {
        self.values.contains_key(key)
    }

    fn raw(&mut self, key: &str) -> Option<String> {
        self.read.push(key.to_string());
        self.values.get(key).cloned()
    }

    fn bad(&self, key: &str, value: &str, expected: &str) -> ControlError {
        ControlError::BadSetting {
            controller: self.controller.clone(),
            key: key.to_string(),
            value: value.to_string(),
            expected: expected.to_string(),
        }
    }

    fn parsed<T: std::str::FromStr>(
        &mut self,
        key: &str,
        default: T,
        expected: &str,
    ) -> Result<T, ControlError> {
        match self.raw(key) {
            None => Ok(default),
            Some(v) => v.trim().parse().map_err(|_| self.bad(key, &v, expected)),
        }
    }

    /// A finite number.
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] when the value is not a finite number.
    pub fn f64(&mut self, key: &str, default: f64) -> Result<f64, ControlError> {
        let v: f64 = self.parsed(key, default, "a number")?;
        if v.is_finite() {
            Ok(v)
        } else {
            Err(self.bad(key, &v.to_string(), "a finite number"))
        }
    }

    /// A non-negative integer.
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] when the value is not a non-negative integer.
    pub fn u64(&mut self, key: &str, default: u64) -> Result<u64, ControlError> {
        self.parsed(key, default, "a non-negative integer")
    }

    /// A non-negative 32-bit integer.
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] when the value is not a non-negative 32-bit integer.
    pub fn u32(&mut self, key: &str, default: u32) -> Result<u32, ControlError> {
        self.parsed(key, default, "a non-negative 32-bit integer")
    }

    /// `true` or `false`.
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] for anything else.
    pub fn bool(&mut self, key: &str, default: bool) -> Result<bool, ControlError> {
        self.parsed(key, default, "true or false")
    }

    /// Any string.
    ///
    /// # Errors
    /// Never; `Result` for uniformity with the other getters.
    pub fn string(&mut self, key: &str, default: &str) -> Result<String, ControlError> {
        Ok(self.raw(key).unwrap_or_else(|| default.to_string()))
    }

    /// A comma-separated list of non-negative 32-bit integers (`"1,2,5,10,16"`).
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] when an element is not such an integer or the list is empty.
    pub fn u32_list(&mut self, key: &str, default: &[u32]) -> Result<Vec<u32>, ControlError> {
        self.list(
            key,
            default,
            "a comma-separated list of non-negative integers",
        )
    }

    /// A comma-separated list of finite numbers.
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] when an element is not a finite number or the list is empty.
    pub fn f64_list(&mut self, key: &str, default: &[f64]) -> Result<Vec<f64>, ControlError> {
        let v: Vec<f64> = self.list(key, default, "a comma-separated list of numbers")?;
        if v.iter().all(|x| x.is_finite()) {
            Ok(v)
        } else {
            Err(self.bad(key, &format!("{v:?}"), "finite numbers"))
        }
    }

    fn list<T: std::str::FromStr + Clone>(
        &mut self,
        key: &str,
        default: &[T],
        expected: &str,
    ) -> Result<Vec<T>, ControlError> {
        let Some(v) = self.raw(key) else {
            return Ok(default.to_vec());
        };
        let items: Result<Vec<T>, _> = v
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .map(|x| x.trim().parse::<T>())
            .collect();
        match items {
            Ok(items) if !items.is_empty() => Ok(items),
            _ => Err(self.bad(key, &v, expected)),
        }
    }

    /// A size in bytes: a plain number or a human size (`"64MiB"`, `"1gb"`).
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] when the value is neither.
    pub fn bytes(&mut self, key: &str, default: u64) -> Result<u64, ControlError> {
        match self.raw(key) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<ByteSize>()
                .map(|b| b.0)
                .map_err(|_| self.bad(key, &v, "a size such as 65536 or 64MiB")),
        }
    }

    /// Ends reading: every given key must have been read by some getter.
    ///
    /// # Errors
    /// [`ControlError::UnknownSetting`] naming the first unread key and the keys that were read.
    pub fn finish(self) -> Result<(), ControlError> {
        for key in self.values.keys() {
            if !self.read.iter().any(|r| r == key) {
                let mut known = self.read.clone();
                known.sort();
                known.dedup();
                return Err(ControlError::UnknownSetting {
                    controller: self.controller.clone(),
                    key: key.clone(),
                    known,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(pairs: &[(&str, &str)]) -> Settings {
        Settings::new(
            "t",
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        )
    }

    #[test]
    fn typed_getters_defaults_and_errors() {
        let mut st = s(&[("k", "1, 2,5"), ("r", "0.01"), ("m", "2MiB"), ("b", "yes")]);
        assert_eq!(st.u32_list("k", &[9]).unwrap(), vec![1, 2, 5]);
        assert_eq!(st.f64("r", 1.0).unwrap(), 0.01);
        assert_eq!(st.bytes("m", 0).unwrap(), 2 << 20);
        assert_eq!(st.u64("absent", 7).unwrap(), 7);
        assert!(matches!(
            st.bool("b", false),
            Err(ControlError::BadSetting { key, .. }) if key == "b"
        ));
        st.finish().unwrap();
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let mut st = s(&[("granularity", "4"), ("granularty", "8")]);
        st.u64("granularity", 1).unwrap();
        let err = st.finish().unwrap_err();
        assert!(
            matches!(&err, ControlError::UnknownSetting { key, known, .. } if key == "granularty" && known == &["granularity"]),
            "{err:?}"
        );
    }
}
