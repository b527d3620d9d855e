//! Tenant isolation: a tenant never sees, counts, flushes or scans another tenant's keys.

use crate::common::{Client, config, start};

/// Writes `k`=`v` through `a`, checks `b` does not see it and that keyless commands stay inside.
fn isolated(a: &mut Client, b: &mut Client) {
    a.cmd(&["SET", "shared:k", "from-a"], "+OK\r\n");
    b.cmd(&["GET", "shared:k"], "$-1\r\n");
    b.cmd(&["SET", "shared:k", "from-b"], "+OK\r\n");
    a.cmd(&["GET", "shared:k"], "$6\r\nfrom-a\r\n");
    b.cmd(&["GET", "shared:k"], "$6\r\nfrom-b\r\n");
    a.cmd(&["SET", "only-a", "1"], "+OK\r\n");
    a.cmd(&["DBSIZE"], ":2\r\n");
    b.cmd(&["DBSIZE"], ":1\r\n");
    b.cmd(&["KEYS", "*"], "*1\r\n$8\r\nshared:k\r\n");
    b.cmd(&["EXISTS", "only-a"], ":0\r\n");
    b.cmd(&["DEL", "only-a"], ":0\r\n");
    b.cmd(&["FLUSHALL"], "+OK\r\n");
    b.cmd(&["DBSIZE"], ":0\r\n");
    a.cmd(&["DBSIZE"], ":2\r\n");
    a.cmd(&["GET", "shared:k"], "$6\r\nfrom-a\r\n");
}

#[test]
fn port_tenants_are_isolated() {
    let srv = start(config(
        "[tenancy]\nmode = \"port\"\n[[tenant]]\nname = \"a\"\nport = 0\n[[tenant]]\nname = \"b\"\nport = 0\n",
    ));
    assert_eq!(
        srv.handle.addrs().len(),
        2,
        "no main listener without default_tenant"
    );
    let mut a = Client::connect(srv.handle.addr_of(Some("a")).unwrap());
    let mut b = Client::connect(srv.handle.addr_of(Some("b")).unwrap());
    isolated(&mut a, &mut b);
}

#[test]
fn user_tenants_are_isolated_and_auth_switches() {
    let srv = start(config(
        r#"
        [tenancy]
        mode = "user"
        [[tenant]]
        name = "a"
        user = "alice"
        password = "pa"
        [[tenant]]
        name = "b"
        user = "bob"
        password = "pb"
        "#,
    ));
    let addr = srv.handle.addrs()[0].addr;
    let mut a = Client::connect(addr);
    let mut b = Client::connect(addr);
    a.cmd(&["PING"], "-NOAUTH Authentication required.\r\n");
    a.cmd(&["AUTH", "alice", "pa"], "+OK\r\n");
    // HELLO 3 AUTH authenticates and switches protocol in one step.
    b.send(&crate::common::enc(&["HELLO", "2", "AUTH", "bob", "pb"]));
    let got = b.read_n(4);
    assert_eq!(got, b"*14\r");
    let _ = b.read_n(1);
    // drain the rest of the HELLO reply, then sync with PING
    b.send(&crate::common::enc(&["PING", "sync"]));
    let mut acc = Vec::new();
    while !acc.ends_with(b"$4\r\nsync\r\n") {
        acc.extend(b.read_n(1));
    }
    isolated(&mut a, &mut b);
    // Re-AUTH as the other user moves the connection to that tenant.
    b.cmd(&["AUTH", "alice", "pa"], "+OK\r\n");
    b.cmd(&["DBSIZE"], ":2\r\n");
}

#[test]
fn db_tenants_are_isolated() {
    let srv = start(config(
        "[tenancy]\nmode = \"db\"\n[[tenant]]\nname = \"a\"\ndb = 0\n[[tenant]]\nname = \"b\"\ndb = 3\n",
    ));
    let addr = srv.handle.addrs()[0].addr;
    let mut a = Client::connect(addr);
    let mut b = Client::connect(addr);
    b.cmd(&["SELECT", "3"], "+OK\r\n");
    b.cmd(&["SELECT", "2"], "-ERR DB index is out of range\r\n");
    isolated(&mut a, &mut b);
    a.cmd(&["SELECT", "3"], "+OK\r\n");
    a.cmd(&["DBSIZE"], ":0\r\n");
}

#[test]
fn prefix_tenants_route_by_longest_prefix() {
    let srv = start(config(
        r#"
        [tenancy]
        mode = "prefix"
        [[tenant]]
        name = "u"
        prefix = "user:"
        [[tenant]]
        name = "vip"
        prefix = "user:vip:"
        "#,
    ));
    let mut c = Client::connect(srv.handle.addrs()[0].addr);
    c.cmd(&["SET", "user:1", "a"], "+OK\r\n");
    c.cmd(&["SET", "user:vip:1", "b"], "+OK\r\n");
    c.cmd(
        &["SET", "other", "x"],
        "-ERR key matches no tenant prefix\r\n",
    );
    c.cmd(
        &["MGET", "user:1", "user:vip:1"],
        "-ERR keys in request span tenants 'u' and 'vip'\r\n",
    );
    c.cmd(
        &["MSET", "user:2", "x", "user:vip:2", "y"],
        "-ERR keys in request span tenants 'u' and 'vip'\r\n",
    );
    c.cmd(
        &["RENAME", "user:1", "user:vip:9"],
        "-ERR keys in request span tenants 'u' and 'vip'\r\n",
    );
    c.cmd(&["KEYS", "user:vip:*"], "*1\r\n$10\r\nuser:vip:1\r\n");
    c.cmd(&["KEYS", "user:*"], "*1\r\n$6\r\nuser:1\r\n");
    c.cmd(&["DBSIZE"], "-ERR keyless command needs a default tenant in prefix tenancy (set tenancy.default_tenant)\r\n");
    let (u, v) = srv.handle.with_engine(|e| {
        let u = e.tenant_by_name("u").unwrap();
        let v = e.tenant_by_name("vip").unwrap();
        (e.len(u), e.len(v))
    });
    assert_eq!((u, v), (1, 1));
}

#[test]
fn tenant_admin_commands() {
    let srv = start(config(
        "[admin]\nuser = \"root\"\npassword = \"pw\"\n[tenancy]\nmode = \"db\"\n[[tenant]]\nname = \"a\"\ndb = 0\nmax = \"8MiB\"\n[[tenant]]\nname = \"b\"\ndb = 1\npolicy = \"allkeys-lfu\"\nsamples = 10\n",
    ));
    let mut c = Client::connect(srv.handle.addrs()[0].addr);
    c.cmd(&["AUTH", "root", "pw"], "+OK\r\n");
    c.cmd(&["LOCUS.TENANT", "LIST"], "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    c.cmd(
        &["LOCUS.TENANT", "b", "GET", "maxmemory*"],
        "*6\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n$16\r\nmaxmemory-policy\r\n$11\r\nallkeys-lfu\r\n$17\r\nmaxmemory-samples\r\n$2\r\n10\r\n",
    );
    c.cmd(
        &["LOCUS.TENANT", "a", "GET", "maxmemory"],
        "*2\r\n$9\r\nmaxmemory\r\n$7\r\n8388608\r\n",
    );
    c.cmd(
        &["LOCUS.TENANT", "b", "SET", "maxmemory-samples", "3"],
        "+OK\r\n",
    );
    c.cmd(
        &["LOCUS.TENANT", "b", "GET", "maxmemory-samples"],
        "*2\r\n$17\r\nmaxmemory-samples\r\n$1\r\n3\r\n",
    );
    c.cmd(&["LOCUS.TENANT", "b", "SET", "maxmemory-samples", "0"], "-ERR LOCUS.TENANT SET maxmemory-samples failed - argument must be between 1 and 64 inclusive\r\n");
    c.cmd(
        &["LOCUS.TENANT", "zz", "GET", "maxmemory"],
        "-ERR no such tenant 'zz'\r\n",
    );
    c.cmd(
        &[
            "LOCUS.TENANT",
            "a",
            "SET",
            "maxmemory-policy",
            "volatile-ttl",
        ],
        "+OK\r\n",
    );
    c.cmd(
        &["LOCUS.TENANT", "a", "GET", "maxmemory-policy"],
        "*2\r\n$16\r\nmaxmemory-policy\r\n$12\r\nvolatile-ttl\r\n",
    );
    // Global CONFIG SET applies to every tenant.
    c.cmd(
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"],
        "+OK\r\n",
    );
    c.cmd(
        &["LOCUS.TENANT", "b", "GET", "maxmemory-policy"],
        "*2\r\n$16\r\nmaxmemory-policy\r\n$14\r\nallkeys-random\r\n",
    );
    c.cmd(&["CONFIG", "SET", "maxmemory", "64mb"], "+OK\r\n");
    c.cmd(
        &["CONFIG", "GET", "maxmemory"],
        "*2\r\n$9\r\nmaxmemory\r\n$8\r\n67108864\r\n",
    );
    c.cmd(&["CONFIG", "SET", "maxmemory", "lots"], "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value\r\n");
    // INFO tenants lists both.
    c.send(&crate::common::enc(&["INFO", "tenants"]));
    let mut acc = Vec::new();
    while !String::from_utf8_lossy(&acc).contains("tenant_b:") || !acc.ends_with(b"\r\n\r\n") {
        let b = c.read_n(1);
        assert!(
            !b.is_empty(),
            "INFO reply ended early: {:?}",
            String::from_utf8_lossy(&acc)
        );
        acc.extend(b);
    }
    let text = String::from_utf8_lossy(&acc);
    assert!(
        text.contains("# Tenants\r\ntenant_a:min=0,max=8388608,"),
        "{text}"
    );
    assert!(text.contains("policy=allkeys-random"), "{text}");
}

#[test]
fn config_set_goes_through_validate() {
    let srv = start(config(
        "[admin]\nuser = \"root\"\npassword = \"pw\"\n[memory]\nmaxmemory = \"64MiB\"\n[tenancy]\nmode = \"db\"\n[[tenant]]\nname = \"a\"\ndb = 0\nmin = \"8MiB\"\n[[tenant]]\nname = \"b\"\ndb = 1\nmin = \"8MiB\"\n",
    ));
    let mut c = Client::connect(srv.handle.addrs()[0].addr);
    c.cmd(&["AUTH", "root", "pw"], "+OK\r\n");
    c.cmd(
        &["CONFIG", "SET", "maxmemory", "10mb"],
        "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - tenant[*].min: the floors add up to 16MiB which exceeds memory.maxmemory 10MiB\r\n",
    );
    // Atomic: a bad pair rejects the whole command, the good pair is not applied either.
    c.cmd(&["CONFIG", "SET", "maxclients", "5", "hz", "0"], "-ERR CONFIG SET failed (possibly related to argument 'hz') - argument must be between 1 and 500 inclusive\r\n");
    c.cmd(
        &["CONFIG", "GET", "maxclients"],
        "*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n",
    );
    c.cmd(
        &[
            "CONFIG",
            "SET",
            "maxmemory",
            "32mb",
            "maxmemory-samples",
            "7",
        ],
        "+OK\r\n",
    );
    c.cmd(
        &["CONFIG", "GET", "maxmemory"],
        "*2\r\n$9\r\nmaxmemory\r\n$8\r\n33554432\r\n",
    );
    c.cmd(
        &["LOCUS.TENANT", "b", "GET", "maxmemory-samples"],
        "*2\r\n$17\r\nmaxmemory-samples\r\n$1\r\n7\r\n",
    );
}
