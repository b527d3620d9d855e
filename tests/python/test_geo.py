"""Geo commands (GEOADD GEODIST GEOHASH GEOPOS GEOSEARCH GEOSEARCHSTORE GEORADIUS GEORADIUSBYMEMBER
and the _RO forms): scores as Redis stores them, replies in RESP2 and RESP3 (distances with four
decimals, coordinates as Redis prints them), options, error words and their order, the STORE forms.
Every test not marked locus_only holds against redis-server 7.0 too (--peer redis); the locus_only
tests search with a radius of 10^300 and of infinity (the server stays up), and refuse a STORE key
of another tenant (prefix tenancy)."""

import math
import random
import re

import pytest
import redis
from redis.exceptions import ResponseError

from conftest import no_retry
from harness import HOST, Raw, encode, free_ports
from test_sort import prefix_tenants_toml

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def raises(msg):
    return pytest.raises(ResponseError, match="^" + re.escape(msg) + "$")


def sicily(r):
    assert r.execute_command("GEOADD", "Sicily", "13.361389", "38.115556", "Palermo",
                             "15.087269", "37.502669", "Catania") == 2


def test_geoadd_scores_and_options(r):
    sicily(r)
    assert r.zscore("Sicily", "Palermo") == 3479099956230698
    assert r.zscore("Sicily", "Catania") == 3479447370796909
    # NX / XX / CH as ZADD's.
    assert r.execute_command("GEOADD", "Sicily", "NX", "13", "38", "Palermo") == 0
    assert r.zscore("Sicily", "Palermo") == 3479099956230698
    assert r.execute_command("GEOADD", "Sicily", "XX", "CH", "13", "38", "Palermo", "1", "1", "New") == 1
    assert r.zcard("Sicily") == 2
    assert r.execute_command("GEOADD", "Sicily", "CH", "13", "38", "Palermo") == 0
    with raises("syntax error"):
        r.execute_command("GEOADD", "Sicily", "NX", "XX", "13", "38", "Palermo")
    with raises("syntax error"):
        r.execute_command("GEOADD", "Sicily", "13", "38", "Palermo", "1")
    with raises("value is not a valid float"):
        r.execute_command("GEOADD", "Sicily", "x", "38", "Palermo")
    with raises("invalid longitude,latitude pair 200.000000,100.000000"):
        r.execute_command("GEOADD", "Sicily", "200", "100", "Palermo")
    with raises("invalid longitude,latitude pair 10.000000,85.060000"):
        r.execute_command("GEOADD", "Sicily", "10", "85.06", "Palermo")
    r.set("str", "x")
    with raises(WRONGTYPE):
        r.execute_command("GEOADD", "str", "13", "38", "Palermo")


def test_geopos_geohash_geodist(r, server):
    sicily(r)
    with Raw(server.port) as c:
        assert c.call("GEODIST", "Sicily", "Palermo", "Catania") == b"166274.1516"
        assert c.call("GEODIST", "Sicily", "Palermo", "Catania", "km") == b"166.2742"
        assert c.call("GEODIST", "Sicily", "Palermo", "Catania", "MI") == b"103.3182"
        assert c.call("GEODIST", "Sicily", "Palermo", "Catania", "ft") == b"545518.8700"
        assert c.call("GEODIST", "Sicily", "Palermo", "Palermo") == b"0.0000"
        c.call("HELLO", "3")
        assert c.call("GEODIST", "Sicily", "Palermo", "Catania") == b"166274.1516"
    assert r.execute_command("GEOHASH", "Sicily", "Palermo", "Catania", "nope") == [
        "sqc8b49rny0", "sqdtr74hyu0", None]
    assert r.execute_command("GEOHASH", "nokey", "a") == [None]
    assert r.execute_command("GEODIST", "Sicily", "Palermo", "nope") is None
    assert r.execute_command("GEODIST", "nokey", "a", "b") is None
    with raises("unsupported unit provided. please use M, KM, FT, MI"):
        r.execute_command("GEODIST", "nokey", "a", "b", "yd")
    with raises("syntax error"):
        r.execute_command("GEODIST", "nokey", "a", "b", "m", "x")
    r.set("str", "x")
    with raises(WRONGTYPE):
        r.execute_command("GEOPOS", "str", "a")
    with raises(WRONGTYPE):
        r.execute_command("GEODIST", "str", "a", "b")


def test_geopos_exact_text(server):
    """Coordinates as Redis prints them: a bulk string in RESP2, a double in RESP3; a missing
    member is a null array (RESP2) or null (RESP3)."""
    with Raw(server.port) as c:
        c.call("FLUSHALL")
        c.call("GEOADD", "Sicily", "13.361389", "38.115556", "Palermo")
        c.send(encode("GEOPOS", "Sicily", "Palermo", "nope"))
        want = (b"*2\r\n*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n"
                b"*-1\r\n")
        got = b""
        while len(got) < len(want):
            c._fill()
            got, c.buf = got + c.buf, b""
        assert got == want
        c.call("HELLO", "3")
        c.send(encode("GEOPOS", "Sicily", "Palermo", "nope"))
        want = b"*2\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n_\r\n"
        got = b""
        while len(got) < len(want):
            c._fill()
            got, c.buf = got + c.buf, b""
        assert got == want
        c.call("FLUSHALL")


def test_georadius_and_geosearch(r):
    sicily(r)
    r.execute_command("GEOADD", "Sicily", "12.758489", "38.788135", "edge1", "17.241510", "38.788135", "edge2")
    assert r.execute_command("GEORADIUS", "Sicily", "15", "37", "200", "km", "ASC") == [
        "Catania", "Palermo"]
    assert r.execute_command("GEORADIUS", "Sicily", "15", "37", "200", "km", "DESC") == [
        "Palermo", "Catania"]
    got = r.execute_command("GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "WITHCOORD",
                            "WITHHASH", "ASC")
    assert got[0][0] == "Catania" and got[0][1] == "56.4413" and got[0][2] == 3479447370796909
    assert [float(x) for x in got[0][3]] == pytest.approx([15.08726745843887329, 37.50266842333162032])
    assert got[1][:2] == ["Palermo", "190.4424"]
    assert r.execute_command("GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "1") == ["Catania"]
    assert len(r.execute_command("GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "1", "ANY")) == 1
    assert r.execute_command("GEORADIUSBYMEMBER", "Sicily", "Palermo", "200", "km", "ASC") == [
        "Palermo", "edge1", "Catania"]
    assert r.execute_command("GEORADIUS_RO", "Sicily", "15", "37", "100", "km") == ["Catania"]
    assert r.execute_command("GEORADIUSBYMEMBER_RO", "Sicily", "Catania", "1", "m") == ["Catania"]
    assert r.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km",
                             "ASC") == ["Catania", "Palermo", "edge2", "edge1"]
    assert r.execute_command("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km",
                             "DESC", "WITHDIST") == [["Catania", "166.2742"], ["edge1", "91.4007"],
                                                     ["Palermo", "0.0000"]]
    assert r.execute_command("GEOSEARCH", "nokey", "FROMMEMBER", "x", "BYRADIUS", "1", "m") == []


def test_store_forms(r):
    sicily(r)
    assert r.execute_command("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "dst") == 2
    assert [tuple(x) for x in r.zrange("dst", 0, -1, withscores=True)] == [
        ("Palermo", 3479099956230698.0), ("Catania", 3479447370796909.0)]
    assert r.execute_command("GEORADIUS", "Sicily", "15", "37", "200", "km", "STOREDIST", "dst") == 2
    assert [(m, round(s, 3)) for m, s in r.zrange("dst", 0, -1, withscores=True)] == [
        ("Catania", 56.441), ("Palermo", 190.442)]
    assert r.execute_command("GEOSEARCHSTORE", "dst2", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "100",
                             "km", "STOREDIST") == 1
    assert [(m, round(s, 3)) for m, s in r.zrange("dst2", 0, -1, withscores=True)] == [("Catania", 56.441)]
    # No result, or no source: the destination is deleted.
    assert r.execute_command("GEOSEARCHSTORE", "dst2", "Sicily", "FROMLONLAT", "0", "0", "BYRADIUS", "1",
                             "m") == 0
    assert r.exists("dst2") == 0
    r.set("dst", "x")
    assert r.execute_command("GEORADIUS", "nokey", "15", "37", "200", "km", "STORE", "dst") == 0
    assert r.exists("dst") == 0
    with raises("STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"):
        r.execute_command("GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "STORE", "dst")
    with raises("syntax error"):
        r.execute_command("GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "STORE", "dst")
    with raises("GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options"):
        r.execute_command("GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "m",
                          "WITHDIST")
    assert r.command_getkeys("GEORADIUS", "src", "1", "1", "1", "km", "STOREDIST", "b") == ["src", "b"]


def test_search_errors_in_order(r):
    sicily(r)
    r.set("str", "x")
    with raises(WRONGTYPE):
        r.execute_command("GEOSEARCH", "str", "BOGUS", "x", "y", "z", "w")
    with raises("syntax error"):
        r.execute_command("GEOSEARCH", "Sicily", "BOGUS", "x", "y", "z", "w")
    with raises("exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH"):
        r.execute_command("GEOSEARCH", "Sicily", "BYRADIUS", "1", "m", "ASC", "WITHDIST")
    with raises("exactly one of BYRADIUS and BYBOX can be specified for geosearch"):
        r.execute_command("geosearch", "Sicily", "FROMLONLAT", "1", "1", "ASC", "WITHDIST")
    with raises("syntax error"):
        r.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "1", "1", "FROMMEMBER", "Palermo", "BYRADIUS",
                          "1", "m")
    with raises("the ANY argument requires COUNT argument"):
        r.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "m", "ANY")
    with raises("COUNT must be > 0"):
        r.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "m", "COUNT", "0")
    with raises("value is not an integer or out of range"):
        r.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "m", "COUNT", "x")
    with raises("need numeric radius"):
        r.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "1", "1", "BYRADIUS", "x", "m")
    with raises("radius cannot be negative"):
        r.execute_command("GEORADIUS", "Sicily", "1", "1", "-1", "m")
    with raises("need numeric width"):
        r.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "1", "1", "BYBOX", "x", "1", "m")
    with raises("height or width cannot be negative"):
        r.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "1", "1", "BYBOX", "1", "-1", "m")
    with raises("could not decode requested zset member"):
        r.execute_command("GEORADIUSBYMEMBER", "Sicily", "nope", "1", "m")
    with raises("could not decode requested zset member"):
        r.execute_command("GEOSEARCH", "Sicily", "FROMMEMBER", "nope", "BYRADIUS", "1", "m")
    with raises("unsupported unit provided. please use M, KM, FT, MI"):
        r.execute_command("GEORADIUS", "Sicily", "1", "1", "1", "yd")
    # A missing key answers after the options are checked.
    with raises("syntax error"):
        r.execute_command("GEORADIUSBYMEMBER", "nokey", "m", "1", "m", "BOGUS")
    assert r.execute_command("GEORADIUSBYMEMBER", "nokey", "m", "1", "m") == []


def test_fuzz_against_haversine(r):
    """Random points and searches: every point within the radius (by the same haversine the server
    uses, away from the boundary) is found, none outside."""
    rnd = random.Random(7)
    R = 6372797.560856
    for _ in range(20):
        r.delete("g")
        lon0, lat0 = rnd.uniform(-170, 170), rnd.uniform(-70, 70)
        radius_km = rnd.choice([1, 10, 50, 200, 1000])
        pts = {}
        args = []
        for i in range(200):
            lon = max(-180, min(180, lon0 + rnd.uniform(-1, 1) * radius_km / 50))
            lat = max(-85, min(85, lat0 + rnd.uniform(-1, 1) * radius_km / 100))
            pts[f"p{i}"] = (lon, lat)
            args += [f"{lon:.6f}", f"{lat:.6f}", f"p{i}"]
        r.execute_command("GEOADD", "g", *args)
        found = set(r.execute_command("GEOSEARCH", "g", "FROMLONLAT", lon0, lat0, "BYRADIUS", radius_km, "km"))

        def hav(lon1, lat1, lon2, lat2):
            p1, p2 = math.radians(lat1), math.radians(lat2)
            u = math.sin((p2 - p1) / 2)
            v = math.sin(math.radians(lon2 - lon1) / 2)
            return 2 * R * math.asin(math.sqrt(u * u + math.cos(p1) * math.cos(p2) * v * v))

        for m, (lon, lat) in pts.items():
            d = hav(lon0, lat0, lon, lat) / 1000
            if d < radius_km * 0.999:
                assert m in found, (m, d, radius_km)
            elif d > radius_km * 1.001:
                assert m not in found, (m, d, radius_km)


@pytest.mark.locus_only
def test_huge_radius_is_bounded(r, server):
    r.execute_command("GEOADD", "g", *sum(([str(i % 360 - 180 + 0.5), str((i % 170) - 84.5), f"m{i}"]
                                           for i in range(2000)), []))
    for radius in ["1e300", "1.7e308"]:
        got = r.execute_command("GEOSEARCH", "g", "FROMLONLAT", "0", "0", "BYRADIUS", radius, "mi", "COUNT", "5")
        assert len(got) == 5
        got = r.execute_command("GEORADIUS", "g", "0", "0", radius, "km")
        assert len(got) == 2000
    got = r.execute_command("GEOSEARCH", "g", "FROMLONLAT", "0", "0", "BYBOX", "1e300", "1e300", "m")
    assert len(got) == 2000
    with raises("need numeric radius"):
        r.execute_command("GEOSEARCH", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1e400", "m")
    assert r.ping()


@pytest.mark.locus_only
def test_store_forms_stay_in_tenant(start_locus_toml):
    """Prefix tenancy: a STORE key under another tenant's prefix is refused before anything runs."""
    (main,) = free_ports(1)
    start_locus_toml(prefix_tenants_toml(main), main)
    a = redis.Redis(host=HOST, port=main, username="alice", password="pa", decode_responses=True,
                    retry=no_retry())
    b = redis.Redis(host=HOST, port=main, username="bob", password="pb", decode_responses=True,
                    retry=no_retry())
    a.execute_command("GEOADD", "a:g", "13.361389", "38.115556", "Palermo")
    for cmd in (("GEORADIUS", "a:g", "13", "38", "500", "km", "STORE", "b:out"),
                ("GEORADIUSBYMEMBER", "a:g", "Palermo", "1", "km", "STOREDIST", "b:out"),
                ("GEOSEARCHSTORE", "b:out", "a:g", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km")):
        with pytest.raises(ResponseError, match="No permissions to access a key"):
            a.execute_command(*cmd)
    assert b.exists("b:out") == 0
    assert a.execute_command("GEORADIUS", "a:g", "13", "38", "500", "km", "STORE", "a:out") == 1
    assert a.zcard("a:out") == 1
