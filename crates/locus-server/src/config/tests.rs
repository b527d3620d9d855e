use super::*;
use locus_engine::control::{ControlConfig, Interval};

#[test]
fn empty_file_is_the_default() {
    let c = ServerConfig::from_toml("", "x").unwrap();
    assert_eq!(c, ServerConfig::default());
    c.validate().unwrap();
}

#[test]
fn shipped_file_equals_defaults() {
    let text = include_str!("../../../../config/locus.toml");
    let c = ServerConfig::from_toml(text, "config/locus.toml").unwrap();
    assert_eq!(c, ServerConfig::default());
}

#[test]
fn print_config_round_trips() {
    let mut c = ServerConfig::default();
    c.tenancy.mode = TenancyMode::Prefix;
    c.tenants.push(TenantSection {
        name: "a".into(),
        prefix: Some("a:".into()),
        max: Some(ByteSize::mib(4)),
        ..Default::default()
    });
    let back = ServerConfig::from_toml(&c.to_toml(), "x").unwrap();
    assert_eq!(back, c);
}

#[test]
fn unknown_keys_are_rejected() {
    let e = ServerConfig::from_toml("[server]\nprot = 1\n", "f.toml").unwrap_err();
    assert!(e.to_string().contains("prot"), "{e}");
}

#[test]
fn every_problem_is_reported_with_its_path() {
    let text = r#"
        [server]
        bind = "localhost"
        threads = 0
        [eviction]
        policy = "lru"
        [tenancy]
        mode = "db"
        default_tenant = "zz"
        [[tenant]]
        name = "a"
        db = 1
        [[tenant]]
        name = "a"
        samples = 100
        max = "1kb"
        min = "2kb"
    "#;
    let c = ServerConfig::from_toml(text, "f").unwrap();
    let Err(ConfigError::Invalid { problems }) = c.validate() else {
        panic!()
    };
    let all = problems.join("\n");
    for needle in [
        "server.bind",
        "server.threads",
        "eviction.policy",
        "tenancy.default_tenant",
        "tenant[1].name",
        "tenant[1].db",
        "tenant[1].samples",
        "tenant[1].max",
    ] {
        assert!(all.contains(needle), "missing {needle} in:\n{all}");
    }
}

#[test]
fn controller_defaults_to_none_and_installs_nothing() {
    let c = ServerConfig::default();
    assert!(!c.controller.enabled());
    assert_eq!(c.controller.interval.0, "1s");
    assert_eq!(c.controller.max_moves, 64);
    let mut eng = Engine::new(
        c.engine_config(),
        std::sync::Arc::new(locus_common::SystemClock),
    )
    .unwrap();
    eng.add_tenant(c.tenant_config(&c.tenant_sections()[0]))
        .unwrap();
    c.install_controller(&mut eng).unwrap();
    assert_eq!(eng.controller_name(), None);
}

#[test]
fn controller_settings_of_every_toml_type_become_text() {
    let text = r#"
        [controller]
        name = "static"
        interval = 5000
        max_moves = 8
        [controller.settings]
        shares = [1, 3.5]
    "#;
    let c = ServerConfig::from_toml(text, "f").unwrap();
    c.validate().unwrap();
    assert_eq!(
        c.controller.parsed_interval().unwrap(),
        Interval::Requests(5000)
    );
    assert_eq!(
        c.controller.settings_pairs().unwrap(),
        vec![("shares".to_string(), "1,3.5".to_string())]
    );
}

#[test]
fn controller_round_trips_through_print_config() {
    let text = r#"
        [controller]
        name = "static"
        interval = "250ms"
        [controller.settings]
        shares = [1, 2]
        [[tenant]]
        name = "a"
        penalty_us = 1500.0
    "#;
    let c = ServerConfig::from_toml(text, "f").unwrap();
    let printed = c.to_toml();
    assert!(printed.contains("[controller]"), "{printed}");
    assert!(printed.contains("[controller.settings]"), "{printed}");
    let back = ServerConfig::from_toml(&printed, "x").unwrap();
    assert_eq!(back, c);
    back.validate().unwrap();
}

#[test]
fn every_controller_problem_is_reported_with_its_path() {
    let problems = |text: &str| -> String {
        let c = ServerConfig::from_toml(text, "f").unwrap();
        match c.validate() {
            Err(ConfigError::Invalid { problems }) => problems.join("\n"),
            other => panic!("expected problems for {text}, got {other:?}"),
        }
    };
    let all = problems(
        r#"
        [controller]
        name = "kredsi"
        interval = "soon"
        max_moves = 0
        [[tenant]]
        name = "a"
        penalty_us = -1.0
        "#,
    );
    for needle in [
        "controller.name: unknown controller \"kredsi\" (one of none, shared, static,",
        "controller.interval: interval 'soon'",
        "controller.max_moves: must be at least 1",
        "tenant[0].penalty_us: -1 is not a non-negative",
    ] {
        assert!(all.contains(needle), "missing {needle} in:\n{all}");
    }
    let all =
        problems("[controller]\nname = \"static\"\n[controller.settings]\nshares = \"1,x\"\n");
    assert!(
        all.contains("controller.settings.shares: \"1,x\" is not valid for controller 'static'"),
        "{all}"
    );
    let all = problems("[controller]\nname = \"static\"\n[controller.settings]\nsharez = 1\n");
    assert!(
        all.contains(
            "controller.settings.sharez: controller 'static' has no such setting (its settings: shares)"
        ),
        "{all}"
    );
    let all = problems("[controller]\nname = \"shared\"\n[controller.settings]\nx = 1\n");
    assert!(
        all.contains(
            "controller.settings.x: controller 'shared' has no such setting (its settings: none)"
        ),
        "{all}"
    );
    let all = problems("[controller.settings]\nshares = 1\n");
    assert!(
        all.contains("controller.settings: settings given but controller.name is \"none\""),
        "{all}"
    );
    let all = problems("[controller]\nname = \"static\"\n[controller.settings.shares]\na = 1\n");
    assert!(all.contains("controller.settings.shares: a table"), "{all}");
}

#[test]
fn install_controller_sets_controller_interval_and_hints() {
    let text = r#"
        [memory]
        maxmemory = "8MiB"
        page_size = "64KiB"
        [tenancy]
        mode = "port"
        [controller]
        name = "static"
        interval = "100"
        max_moves = 4
        [controller.settings]
        shares = [1, 3]
        [[tenant]]
        name = "a"
        port = 0
        [[tenant]]
        name = "b"
        port = 0
        penalty_us = 250
    "#;
    let c = ServerConfig::from_toml(text, "f").unwrap();
    c.validate().unwrap();
    let mut eng = Engine::new(
        c.engine_config(),
        std::sync::Arc::new(locus_common::SystemClock),
    )
    .unwrap();
    for t in c.tenant_sections() {
        eng.add_tenant(c.tenant_config(&t)).unwrap();
    }
    c.install_controller(&mut eng).unwrap();
    assert_eq!(eng.controller_name(), Some("static"));
    assert_eq!(
        eng.control_config(),
        Some(ControlConfig {
            interval: Interval::Requests(100),
            max_moves: 4,
            offload: true,
        })
    );
    let b = eng.tenant_by_name("b").unwrap();
    assert_eq!(eng.penalty(b), (250.0, 0));
    eng.run_controller();
    assert_eq!(eng.targets(), vec![Some(32), Some(96)]);
}

#[test]
fn memcached_section_sets_the_ladder_and_reports_problems() {
    let c = ServerConfig::from_toml("[memcached]\nport = 11211\n", "x").unwrap();
    c.validate().unwrap();
    let e = c.engine_config();
    assert_eq!(e.min_chunk, 96);
    assert_eq!(e.slab_growth_factor, 1.25);
    assert_eq!(e.page_size, 1 << 20);
    assert_eq!(
        c.memcached.controller_name(&c.controller).as_deref(),
        Some("lama")
    );
    let text = r#"
[server]
port = 7000
[controller]
name = "dlru"
[memcached]
port = 7000
max_item_size = 10
growth_factor = 3.0
controller = "lama"
"#;
    let err = ServerConfig::from_toml(text, "x")
        .unwrap()
        .validate()
        .unwrap_err()
        .to_string();
    for key in [
        "memcached.max_item_size",
        "memcached.growth_factor",
        "memcached.controller",
        "memcached.port: 7000 is also server.port",
    ] {
        assert!(err.contains(key), "{key} missing in {err}");
    }
    let bad = ServerConfig::from_toml("[memcached]\nport = 1\ncontroller = \"nope\"\n", "x")
        .unwrap()
        .validate()
        .unwrap_err()
        .to_string();
    assert!(bad.contains("memcached.name: unknown controller"), "{bad}");
}

#[test]
fn memcached_slab_controller_is_offloaded_unless_turned_off() {
    let offload = |text: &str| {
        let c = ServerConfig::from_toml(text, "x").unwrap();
        let (_, run) = c
            .memcached
            .build_controller(&c.controller)
            .unwrap()
            .unwrap();
        run.offload
    };
    assert!(offload("[memcached]\nport = 11211\n"));
    assert!(!offload("[memcached]\nport = 11211\noffload = false\n"));
}

#[test]
fn memcached_auth_needs_a_tenant_with_credentials() {
    let err = ServerConfig::from_toml("[memcached]\nport = 11299\nauth = true\n", "x")
        .unwrap()
        .validate()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("memcached.auth: no [[tenant]] has a user and password"),
        "{err}"
    );
    let ok = "[memcached]\nport = 11299\nauth = true\n\n[[tenant]]\nname = \"a\"\nuser = \"u\"\npassword = \"p\"\n";
    ServerConfig::from_toml(ok, "x")
        .unwrap()
        .validate()
        .unwrap();
}

#[test]
fn dump_load_settings_are_validated_with_their_key() {
    let text = r#"
[dump_load]
bucket = "0s"
window = 1
[[tenant]]
name = "a"
dump_load = "sometimes"
[[tenant]]
name = "b"
dump_load = "auto"
"#;
    let c = ServerConfig::from_toml(text, "f").unwrap();
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("dump_load.bucket: must be > 0"), "{e}");
    assert!(e.contains("dump_load.window: 1 is not >= 2"), "{e}");
    assert!(
        e.contains("tenant[0].dump_load (a): dump_load 'sometimes'"),
        "{e}"
    );
    assert!(e.contains("needs [snapshot] dir"), "{e}");
    let ok = "[snapshot]\ndir = \"/tmp/x\"\n[tenancy]\nmode = \"user\"\n[[tenant]]\nname = \"a\"\n\
              user = \"a\"\npassword = \"a\"\ndump_load = \"every 24h idle 1h-7h lead 10m\"\n";
    let c = ServerConfig::from_toml(ok, "f").unwrap();
    c.validate().unwrap();
    assert!(matches!(
        c.dump_load_modes().unwrap()[0],
        locus_control::DumpLoadMode::Schedule(_)
    ));
}

#[test]
fn lama_qos_targets_come_from_the_controller_settings() {
    // One hit-ratio target per tenant, in tenant order (LAMA's QoS partition).
    let text = r#"
        [controller]
        name = "lama"
        [controller.settings]
        objective = "qos"
        qos_hit_ratio = [0.8, 0]
        [tenancy]
        mode = "db"
        [[tenant]]
        name = "critical"
        db = 0
        [[tenant]]
        name = "bulk"
        db = 1
    "#;
    let c = ServerConfig::from_toml(text, "f").unwrap();
    c.validate().unwrap();
    assert!(c.controller.build().unwrap().is_some());
    let bad = ServerConfig::from_toml(&text.replace("0.8, 0", "1.8, 0"), "f").unwrap();
    let Err(ConfigError::Invalid { problems }) = bad.validate() else {
        panic!("a hit ratio of 1.8 was accepted");
    };
    assert!(
        problems.join("\n").contains("qos_hit_ratio"),
        "{problems:?}"
    );
}

#[test]
fn tier_section_round_trips_and_names_its_keys() {
    let c = ServerConfig::from_toml(
        "[memory]\nmaxmemory = \"64MiB\"\n[tier]\nslow_backend = \"emulated:120\"\nfast_memory = \"16MiB\"\n",
        "x",
    )
    .unwrap();
    c.validate().unwrap();
    let e = c.engine_config();
    let t = e.tier.as_ref().unwrap();
    assert_eq!(t.fast_share, 0.25);
    assert_eq!(
        t.slow_backend,
        locus_engine::SlowBackend::Emulated { ns: 120 }
    );
    assert_eq!(t.worker_interval, 0, "the server's worker thread runs them");
    assert!(e.large_items.is_none() && !e.metadata_in_budget);
    assert_eq!(ServerConfig::from_toml(&c.to_toml(), "x").unwrap(), c);
    assert!(ServerConfig::default().engine_config().tier.is_none());
    let bad = ServerConfig::from_toml(
        "[memory]\nmaxmemory = \"64MiB\"\n[tier]\nslow_backend = \"dram:1\"\nfast_memory = \"64MiB\"\nlow_watermark = 0.2\n",
        "x",
    )
    .unwrap();
    let msg = bad.validate().unwrap_err().to_string();
    for key in [
        "tier.slow_backend: unknown backend 'dram'",
        "tier.fast_memory",
        "tier.low_watermark",
    ] {
        assert!(msg.contains(key), "{key} missing from {msg}");
    }
    assert!(!msg.contains("memory: tier"), "{msg}");
}
