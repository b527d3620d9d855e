//! The book's configuration page (`docs/configuration.md`) against the code's own table of
//! settings: the keys each configuration section accepts (as its `deny_unknown_fields` refusal
//! lists them), the defaults `--print-config` prints, and each controller's settings (as its
//! builder's refusal of an unknown one lists them). The page cannot drift from the code: a key on
//! one side only, or a default that differs, fails here.

use std::collections::{BTreeMap, BTreeSet};

use locus_engine::control::{ControlError, Settings};

use super::*;

const PAGE: &str = include_str!("../../../../docs/configuration.md");
const PROBE: &str = "zzz_probe";

/// The backticked names after "expected" in a refusal of [`PROBE`].
fn expected_names(message: &str) -> Vec<String> {
    let at = message
        .find("expected")
        .unwrap_or_else(|| panic!("no list of known keys in {message:?}"));
    message[at..]
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Every key the file accepts, as `section.key`, from the refusals of an unknown key.
fn code_keys() -> BTreeSet<String> {
    let refusal = |text: &str| -> String {
        match ServerConfig::from_toml(text, "probe") {
            Err(e) => e.to_string(),
            Ok(c) => match c.validate() {
                Err(e) => e.to_string(),
                Ok(()) => panic!("{text:?} was accepted"),
            },
        }
    };
    let mut keys = BTreeSet::new();
    for section in expected_names(&refusal(&format!("{PROBE} = 1\n"))) {
        let probe = match section.as_str() {
            "tenant" => format!("[[tenant]]\nname = \"a\"\n{PROBE} = 1\n"),
            s => format!("[{s}]\n{PROBE} = 1\n"),
        };
        for key in expected_names(&refusal(&probe)) {
            keys.insert(format!("{section}.{key}"));
        }
    }
    // `[tier]` is read by the engine's TierConfig, plus one form the server adds: the fast tier
    // as a size (`tier::TierSection::read`). Check that it is accepted rather than assume it.
    let c = ServerConfig::from_toml("[tier]\nfast_memory = \"64MiB\"\n", "probe").unwrap();
    c.validate().unwrap();
    keys.insert("tier.fast_memory".into());
    keys
}

/// The page's setting tables: `| `section.key` | default | meaning |` rows.
fn page_keys() -> BTreeMap<String, String> {
    let mut rows = BTreeMap::new();
    for line in PAGE.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // ["", "`a.b`", "default", "meaning", ""]
        if cells.len() < 5 || !cells[1].starts_with('`') || !cells[1].contains('.') {
            continue;
        }
        let key = cells[1].trim_matches('`').to_string();
        let before = rows.insert(key.clone(), cells[2].to_string());
        assert!(before.is_none(), "docs/configuration.md lists {key} twice");
    }
    rows
}

/// `section.key` → value of the default configuration as `--print-config` prints it.
fn printed_defaults() -> BTreeMap<String, toml::Value> {
    let table: toml::Table = toml::from_str(&ServerConfig::default().to_toml()).unwrap();
    let mut out = BTreeMap::new();
    for (section, v) in table {
        if let toml::Value::Table(t) = v {
            for (key, value) in t {
                out.insert(format!("{section}.{key}"), value);
            }
        }
    }
    out
}

#[test]
fn the_book_documents_every_setting() {
    let code = code_keys();
    let page = page_keys();
    let documented: BTreeSet<String> = page.keys().cloned().collect();
    let missing: Vec<_> = code.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&code).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "docs/configuration.md against the code's settings:\n  accepted by the code, not on the \
         page: {missing:?}\n  on the page, refused by the code: {unknown:?}"
    );
    let printed = printed_defaults();
    for (key, cell) in &page {
        match printed.get(key) {
            Some(value) => {
                let literal = cell
                    .strip_prefix('`')
                    .and_then(|c| c.strip_suffix('`'))
                    .unwrap_or_else(|| {
                        panic!("{key}: --print-config prints {value}, the page says {cell:?}")
                    });
                let parsed: toml::Table = toml::from_str(&format!("v = {literal}"))
                    .unwrap_or_else(|e| panic!("{key}: default {cell} is not TOML: {e}"));
                assert_eq!(
                    &parsed["v"], value,
                    "{key}: the page's default differs from --print-config's"
                );
            }
            None => {
                // Not printed: an optional key, or a section absent by default (`[tier]`,
                // `[[tenant]]`), whose defaults the page states in words or as a literal.
                let section = key.split('.').next().unwrap_or_default();
                if !matches!(section, "tier" | "tenant") {
                    assert_eq!(cell, "unset", "{key}: --print-config prints nothing for it");
                }
            }
        }
    }
}

/// The settings each controller reads, from its refusal of an unknown one.
fn controller_settings(name: &str) -> Vec<String> {
    let probe = Settings::new(name, [(PROBE.to_string(), "1".to_string())]);
    match locus_control::build(name, probe) {
        Err(ControlError::UnknownSetting { known, .. }) => known,
        Err(e) => panic!("{name}: expected a refusal of {PROBE}, got {e}"),
        Ok(_) => panic!("{name}: {PROBE} was accepted"),
    }
}

/// The page's controller settings: each `### `name`[, `name`…]` subsection of "Controller
/// settings" with the settings its table lists (none for "No settings.").
fn page_controller_settings() -> BTreeMap<String, BTreeSet<String>> {
    let start = PAGE
        .find("## Controller settings")
        .expect("docs/configuration.md has a section \"Controller settings\"");
    let mut page: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Vec<String> = Vec::new();
    for line in PAGE[start..].lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            current = heading
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect();
            for name in &current {
                page.insert(name.clone(), BTreeSet::new());
            }
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 5 || !cells[1].starts_with('`') {
            continue;
        }
        for name in &current {
            let settings = page.get_mut(name).expect("inserted at its heading");
            settings.insert(cells[1].trim_matches('`').to_string());
        }
    }
    page
}

#[test]
fn the_book_lists_every_controller_setting() {
    let page = page_controller_settings();
    let listed: BTreeSet<&str> = page.keys().map(String::as_str).collect();
    let registered: BTreeSet<&str> = locus_control::NAMES.iter().copied().collect();
    assert_eq!(
        listed, registered,
        "controllers on the page against the registry"
    );
    for name in locus_control::NAMES {
        // The oracle refuses to run live without its plan before it looks at other keys; its
        // section lists `targets` and `schedule` (live) and the simulator's planning settings.
        if *name == "oracle" {
            continue;
        }
        let code: BTreeSet<String> = controller_settings(name).into_iter().collect();
        let mut documented = page[*name].clone();
        // Read by the simulator's offline planner, not by the builder.
        documented.remove("per_phase");
        assert_eq!(
            documented, code,
            "{name}: its settings on the page against the code"
        );
    }
}

/// `section.key` of every key `config/locus.toml` shows, set or commented out (`# key = ...`
/// under `[section]` or `# [section]`); a sub-table header such as `# [controller.settings]`
/// counts as the key `controller.settings`.
fn shipped_file_keys() -> BTreeSet<String> {
    let text = include_str!("../../../../config/locus.toml");
    let mut keys = BTreeSet::new();
    let mut section: Option<String> = None;
    for line in text.lines() {
        let line = line.trim().trim_start_matches('#').trim_start();
        if let Some(header) = line.strip_prefix('[') {
            let name = header.trim_start_matches('[');
            let name = &name[..name.find(']').unwrap_or(name.len())];
            if name.contains('.') {
                keys.insert(name.to_string());
                section = None;
            } else {
                section = Some(name.to_string());
            }
            continue;
        }
        let Some((key, _)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if let Some(s) = &section
            && !key.is_empty()
            && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
        {
            keys.insert(format!("{s}.{key}"));
        }
    }
    keys
}

#[test]
fn the_shipped_file_shows_every_setting() {
    let code = code_keys();
    let file = shipped_file_keys();
    let missing: Vec<_> = code.difference(&file).collect();
    let unknown: Vec<_> = file.difference(&code).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "config/locus.toml against the code's settings:\n  accepted by the code, not in the file: \
         {missing:?}\n  in the file, refused by the code: {unknown:?}"
    );
}
