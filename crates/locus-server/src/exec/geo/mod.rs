//! Geo commands: GEOADD GEODIST GEOHASH GEOPOS GEOSEARCH GEOSEARCHSTORE GEORADIUS
//! GEORADIUSBYMEMBER and the read-only GEORADIUS_RO GEORADIUSBYMEMBER_RO, over sorted sets whose
//! scores are 52-bit geohashes ([`hash`]), as Redis 7.0 stores them: a geo index is a sorted set
//! any sorted-set command reads and writes, and Redis's own scores load unchanged.
//!
//! Replies as Redis 7.0: distances with 4 decimals (a bulk string in RESP2 and RESP3),
//! coordinates as Redis prints a long double in human form (`%.17Lf` without trailing zeros; a
//! RESP3 double), hashes as integers; error words and their order (the key's type first, then the
//! arguments from left to right). A search scans the center cell and its eight neighbours as
//! score ranges, in Redis's order, so an unsorted result comes in Redis's order too.
//!
//! Bounds: a radius or box of any size (10^300 m, infinity in miles) is one search of the whole
//! sorted set at the coarsest step; the result is bounded by the sorted set (COUNT bounds it
//! further); the STORE forms write the tenant's own keys only (routed as every key is).

pub mod hash;

use locus_engine::{TenantId, ValueRef};
use locus_protocol::{ProtocolVersion, ReplyWriter};

use super::notify::{GENERIC, NEW, ZSET, notify};
use super::types::zset::{Zset, parse_score};
use super::{Args, CmdError, CmdResult, Ctx, is, parse_i64};
use hash::{Search, Shape};

/// `ERR value is not a valid float`, the error of Redis's `getDoubleFromObjectOrReply`.
fn float_arg(b: &[u8], msg: Option<&str>) -> Result<f64, CmdError> {
    parse_score(b).ok_or_else(|| match msg {
        Some(m) => CmdError::msg(format!("ERR {m}")),
        None => CmdError::NotFloat,
    })
}

/// A longitude and a latitude from two arguments, within the stored ranges.
fn lon_lat(a: &[u8], b: &[u8]) -> Result<(f64, f64), CmdError> {
    let lon = float_arg(a, None)?;
    let lat = float_arg(b, None)?;
    if !(hash::LONG_MIN..=hash::LONG_MAX).contains(&lon)
        || !(hash::LAT_MIN..=hash::LAT_MAX).contains(&lat)
    {
        return Err(CmdError::msg(format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        )));
    }
    Ok((lon, lat))
}

/// Meters per `unit`.
fn unit(u: &[u8]) -> Result<f64, CmdError> {
    if is(u, "m") {
        Ok(1.0)
    } else if is(u, "km") {
        Ok(1000.0)
    } else if is(u, "ft") {
        Ok(0.3048)
    } else if is(u, "mi") {
        Ok(1609.34)
    } else {
        Err(CmdError::msg(
            "ERR unsupported unit provided. please use M, KM, FT, MI",
        ))
    }
}

/// A distance as Redis prints it: rounded to 4 decimals (`llrint`), all 4 printed.
pub fn fmt_distance(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".to_string();
    }
    let v = (d * 10_000.0).round_ties_even() as i64;
    let neg = v < 0;
    let u = v.unsigned_abs();
    format!(
        "{}{}.{:04}",
        if neg { "-" } else { "" },
        u / 10_000,
        u % 10_000
    )
}

/// A coordinate as Redis prints a long double in human form (`%.17Lf`, trailing zeros off).
pub fn fmt_coord(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let mut s = format!("{v:.17}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s = "0".to_string();
    }
    s
}

fn reply_coord(w: &mut ReplyWriter<'_>, v: f64) {
    let s = fmt_coord(v);
    if w.proto() == ProtocolVersion::Resp3 {
        w.raw(b",");
        w.raw(s.as_bytes());
        w.raw(b"\r\n");
    } else {
        w.bulk(s.as_bytes());
    }
}

/// Looks the key up as Redis's `lookupKeyRead` (a hit or a miss), checking it is a sorted set.
fn lookup(ctx: &mut Ctx<'_>, t: TenantId, key: &[u8]) -> Result<bool, CmdError> {
    match ctx.eng.get_value(t, key) {
        None => Ok(false),
        Some(ValueRef::Obj(o)) if o.as_any().is::<Zset>() => Ok(true),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// The scores of `members` in the sorted set at `key` (read without touching it again).
fn scores(ctx: &mut Ctx<'_>, t: TenantId, key: &[u8], members: &[&[u8]]) -> Vec<Option<f64>> {
    match ctx.eng.peek_value(t, key) {
        Some(ValueRef::Obj(o)) => match o.as_any().downcast_ref::<Zset>() {
            Some(z) => members.iter().map(|m| z.score(m)).collect(),
            None => vec![None; members.len()],
        },
        _ => vec![None; members.len()],
    }
}

/// `GEOADD key [NX|XX] [CH] longitude latitude member [longitude latitude member ...]`: ZADD
/// of each member with its position's score (Redis runs ZADD itself, with GEOADD's options).
pub fn geoadd(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let (mut nx, mut xx) = (false, false);
    let mut i = 2;
    while i < a.len() {
        if is(&a[i], "nx") {
            nx = true;
        } else if is(&a[i], "xx") {
            xx = true;
        } else if !is(&a[i], "ch") {
            break;
        }
        i += 1;
    }
    if !(a.len() - i).is_multiple_of(3) || (nx && xx) {
        return Err(CmdError::Syntax);
    }
    let mut zargs: Vec<std::borrow::Cow<'_, [u8]>> = Vec::with_capacity(i + (a.len() - i) / 3 * 2);
    zargs.push(std::borrow::Cow::Borrowed(b"zadd"));
    zargs.extend(a[1..i].iter().map(|x| std::borrow::Cow::Borrowed(&x[..])));
    for e in a[i..].chunks(3) {
        let (lon, lat) = lon_lat(&e[0], &e[1])?;
        let score = hash::score_of(lon, lat).ok_or(CmdError::NotFloat)?;
        zargs.push(std::borrow::Cow::Owned(
            itoa::Buffer::new().format(score).as_bytes().to_vec(),
        ));
        zargs.push(std::borrow::Cow::Borrowed(&e[2][..]));
    }
    super::types::zset::zadd(ctx, &zargs)
}

/// `GEODIST key member1 member2 [M|KM|FT|MI]`
pub fn geodist(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let to_meters = match a.len() {
        5 => unit(&a[4])?,
        4 => 1.0,
        _ => return Err(CmdError::Syntax),
    };
    let t = ctx.t()?;
    if !lookup(ctx, t, &a[1])? {
        ctx.w.null();
        return Ok(());
    }
    let s = scores(ctx, t, &a[1], &[&a[2], &a[3]]);
    match (
        s[0].and_then(hash::position_of),
        s[1].and_then(hash::position_of),
    ) {
        (Some((lon1, lat1)), Some((lon2, lat2))) => {
            let d = hash::distance(lon1, lat1, lon2, lat2) / to_meters;
            ctx.w.bulk(fmt_distance(d).as_bytes());
        }
        _ => ctx.w.null(),
    }
    Ok(())
}

/// GEOHASH's and GEOPOS's lookup: the key read once (WRONGTYPE for another type), then the
/// score of each member named from the third argument on.
fn member_scores(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> Result<Vec<Option<f64>>, CmdError> {
    let t = ctx.t()?;
    lookup(ctx, t, &a[1])?;
    let members: Vec<&[u8]> = a[2..].iter().map(|m| &m[..]).collect();
    Ok(scores(ctx, t, &a[1], &members))
}

/// `GEOHASH key [member ...]`
pub fn geohash(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let s = member_scores(ctx, a)?;
    ctx.w.array(s.len());
    for sc in s {
        match sc.and_then(hash::geohash_string) {
            Some(h) => ctx.w.bulk(&h),
            None => ctx.w.null(),
        }
    }
    Ok(())
}

/// `GEOPOS key [member ...]`
pub fn geopos(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let s = member_scores(ctx, a)?;
    ctx.w.array(s.len());
    for sc in s {
        match sc.and_then(hash::position_of) {
            Some((lon, lat)) => {
                ctx.w.array(2);
                reply_coord(&mut ctx.w, lon);
                reply_coord(&mut ctx.w, lat);
            }
            None => ctx.w.null_array(),
        }
    }
    Ok(())
}

/// Which search command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS / GEORADIUS_RO: center from coordinates.
    Coords { store: bool },
    /// GEORADIUSBYMEMBER / _RO: center from a member.
    Member { store: bool },
    /// GEOSEARCH.
    Search,
    /// GEOSEARCHSTORE.
    SearchStore,
}

impl Form {
    fn geosearch(self) -> bool {
        matches!(self, Form::Search | Form::SearchStore)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    None,
    Asc,
    Desc,
}

/// One point found.
struct Point {
    member: Vec<u8>,
    lon: f64,
    lat: f64,
    dist: f64,
    score: f64,
}

/// The points of the sorted set at `key` inside `s`, scanning its cells in Redis's order; at
/// most `limit` when it is not 0 (ANY).
fn find_points(ctx: &mut Ctx<'_>, t: TenantId, key: &[u8], s: &Search, limit: usize) -> Vec<Point> {
    let cells = s.cells();
    let mut out: Vec<Point> = Vec::new();
    let Some(ValueRef::Obj(o)) = ctx.eng.peek_value(t, key) else {
        return out;
    };
    let Some(z) = o.as_any().downcast_ref::<Zset>() else {
        return out;
    };
    let mut last = 0usize;
    for (i, c) in cells.iter().enumerate() {
        if c.bits == 0 && c.step == 0 {
            continue;
        }
        // A huge radius makes neighbours coincide: skip a cell equal to the one scanned last.
        if last != 0 && *c == cells[last] {
            continue;
        }
        if limit != 0 && out.len() >= limit {
            break;
        }
        let (min, max) = hash::score_range(*c);
        let (min, max) = (min as f64, max as f64);
        let lo = z.count_while(|sc, _| sc < min);
        let hi = z.count_while(|sc, _| sc < max);
        let mut full = false;
        z.visit(lo, hi, false, |m, sc| {
            if full {
                return;
            }
            if let Some((lon, lat)) = hash::position_of(sc)
                && let Some(dist) = s.contains(lon, lat)
            {
                out.push(Point {
                    member: m.to_vec(),
                    lon,
                    lat,
                    dist,
                    score: sc,
                });
            }
            if limit != 0 && out.len() >= limit {
                full = true;
            }
        });
        last = i;
    }
    out
}

/// GEORADIUS, GEORADIUSBYMEMBER (and _RO), GEOSEARCH, GEOSEARCHSTORE: Redis's
/// `georadiusGeneric`.
fn search(ctx: &mut Ctx<'_>, a: Args<'_, '_>, form: Form) -> CmdResult {
    let t = ctx.t()?;
    let src_idx = if form == Form::SearchStore { 2 } else { 1 };
    let src = &a[src_idx][..];
    let exists = lookup(ctx, t, src)?;
    let mut center: Option<(f64, f64)> = None;
    let mut shape: Option<Shape> = None;
    let mut conversion = 1.0;
    let mut store: Option<&[u8]> = None;
    let mut storedist = false;
    let base = match form {
        Form::Coords { .. } => {
            center = Some(lon_lat(&a[2], &a[3])?);
            let r = radius(&a[4..6], &mut conversion)?;
            shape = Some(Shape::Circle { radius: r });
            6
        }
        Form::Member { .. } => {
            if exists {
                let sc = scores(ctx, t, src, &[&a[2]])[0];
                center =
                    Some(sc.and_then(hash::position_of).ok_or_else(|| {
                        CmdError::msg("ERR could not decode requested zset member")
                    })?);
                let r = radius(&a[3..5], &mut conversion)?;
                shape = Some(Shape::Circle { radius: r });
            }
            5
        }
        Form::Search => 2,
        Form::SearchStore => {
            store = Some(&a[1]);
            3
        }
    };
    let may_store = matches!(
        form,
        Form::Coords { store: true } | Form::Member { store: true }
    );
    let (mut withdist, mut withhash, mut withcoord, mut any) = (false, false, false, false);
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let mut order = Order::None;
    let mut count: i64 = 0;
    let rem = a.len().saturating_sub(base);
    let mut i = 0;
    while i < rem {
        let arg = &a[base + i];
        let at = |k: usize| &a[base + i + k][..];
        if is(arg, "withdist") {
            withdist = true;
        } else if is(arg, "withhash") {
            withhash = true;
        } else if is(arg, "withcoord") {
            withcoord = true;
        } else if is(arg, "any") {
            any = true;
        } else if is(arg, "asc") {
            order = Order::Asc;
        } else if is(arg, "desc") {
            order = Order::Desc;
        } else if is(arg, "count") && i + 1 < rem {
            count = parse_i64(at(1)).ok_or(CmdError::NotInteger)?;
            if count <= 0 {
                return Err(CmdError::msg("ERR COUNT must be > 0"));
            }
            i += 1;
        } else if (is(arg, "store") || is(arg, "storedist")) && i + 1 < rem && may_store {
            store = Some(at(1));
            storedist = is(arg, "storedist");
            i += 1;
        } else if is(arg, "storedist") && form == Form::SearchStore {
            storedist = true;
        } else if is(arg, "frommember") && i + 1 < rem && form.geosearch() && !fromloc {
            if exists {
                let sc = scores(ctx, t, src, &[at(1)])[0];
                center =
                    Some(sc.and_then(hash::position_of).ok_or_else(|| {
                        CmdError::msg("ERR could not decode requested zset member")
                    })?);
            }
            frommember = true;
            i += 1;
        } else if is(arg, "fromlonlat") && i + 2 < rem && form.geosearch() && !frommember {
            center = Some(lon_lat(at(1), at(2))?);
            fromloc = true;
            i += 2;
        } else if is(arg, "byradius") && i + 2 < rem && form.geosearch() && !bybox {
            let r = radius(&a[base + i + 1..base + i + 3], &mut conversion)?;
            shape = Some(Shape::Circle { radius: r });
            byradius = true;
            i += 2;
        } else if is(arg, "bybox") && i + 3 < rem && form.geosearch() && !byradius {
            let width = float_arg(at(1), Some("need numeric width"))?;
            let height = float_arg(at(2), Some("need numeric height"))?;
            if width < 0.0 || height < 0.0 {
                return Err(CmdError::msg("ERR height or width cannot be negative"));
            }
            conversion = unit(at(3))?;
            shape = Some(Shape::Box { width, height });
            bybox = true;
            i += 3;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if store.is_some() && (withdist || withhash || withcoord) {
        return Err(CmdError::msg(format!(
            "ERR {} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            if form == Form::SearchStore {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            }
        )));
    }
    let name = String::from_utf8_lossy(&a[0]);
    if form.geosearch() && !(frommember || fromloc) {
        return Err(CmdError::msg(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if form.geosearch() && !(byradius || bybox) {
        return Err(CmdError::msg(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
        )));
    }
    if any && count == 0 {
        return Err(CmdError::msg(
            "ERR the ANY argument requires COUNT argument",
        ));
    }
    if !exists {
        match store {
            Some(dst) => {
                store_points(ctx, t, dst, Vec::new(), form)?;
                ctx.w.integer(0);
            }
            None => ctx.w.array(0),
        }
        return Ok(());
    }
    if count != 0 && order == Order::None && !any {
        order = Order::Asc;
    }
    let (Some((lon, lat)), Some(shape)) = (center, shape) else {
        // Unreachable: an existing key has its center and shape by now.
        return Err(CmdError::Syntax);
    };
    let s = Search {
        lon,
        lat,
        shape,
        conversion,
    };
    let limit = if any { count as usize } else { 0 };
    let mut points = find_points(ctx, t, src, &s, limit);
    match order {
        Order::Asc => points.sort_by(|x, y| x.dist.total_cmp(&y.dist)),
        Order::Desc => points.sort_by(|x, y| y.dist.total_cmp(&x.dist)),
        Order::None => {}
    }
    let returned = if count == 0 {
        points.len()
    } else {
        points.len().min(count as usize)
    };
    points.truncate(returned);
    for p in &mut points {
        p.dist /= conversion;
    }
    match store {
        None => {
            let opts = usize::from(withdist) + usize::from(withhash) + usize::from(withcoord);
            ctx.w.array(points.len());
            for p in &points {
                if opts > 0 {
                    ctx.w.array(opts + 1);
                }
                ctx.w.bulk(&p.member);
                if withdist {
                    ctx.w.bulk(fmt_distance(p.dist).as_bytes());
                }
                if withhash {
                    ctx.w.integer(p.score as i64);
                }
                if withcoord {
                    ctx.w.array(2);
                    reply_coord(&mut ctx.w, p.lon);
                    reply_coord(&mut ctx.w, p.lat);
                }
            }
        }
        Some(dst) => {
            let pairs: Vec<(Vec<u8>, f64)> = points
                .into_iter()
                .map(|p| (p.member, if storedist { p.dist } else { p.score }))
                .collect();
            store_points(ctx, t, dst, pairs, form)?;
            ctx.w.integer(returned as i64);
        }
    }
    Ok(())
}

/// A radius and its unit (`radius unit`), with Redis's errors.
fn radius(a: &[std::borrow::Cow<'_, [u8]>], conversion: &mut f64) -> Result<f64, CmdError> {
    let r = float_arg(&a[0], Some("need numeric radius"))?;
    if r < 0.0 {
        return Err(CmdError::msg("ERR radius cannot be negative"));
    }
    *conversion = unit(&a[1])?;
    Ok(r)
}

/// Stores the found points at `dst` as a sorted set (replacing any value and TTL), or deletes
/// `dst` when none were found; WATCH, events and blocked clients as Redis's `setKey` /
/// `dbDelete`.
fn store_points(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    dst: &[u8],
    mut pairs: Vec<(Vec<u8>, f64)>,
    form: Form,
) -> CmdResult {
    ctx.fx.note_dumped_write(t, &[dst], false);
    if pairs.is_empty() {
        if ctx.eng.delete(t, dst) {
            ctx.fx.key_changed(t, dst);
            notify(ctx.fx, t, ctx.conn.db, GENERIC, "del", dst);
        }
        return Ok(());
    }
    // A member found twice (coinciding cells) is stored once.
    let mut seen = std::collections::HashSet::new();
    pairs.retain(|(m, _)| seen.insert(m.clone()));
    let existed = super::types::store(ctx, t, dst, Box::new(Zset::from_pairs(&pairs)))?;
    ctx.fx.key_changed(t, dst);
    ctx.fx.note_encoding("geosearchstore", t, &[dst]);
    if !existed {
        notify(ctx.fx, t, ctx.conn.db, NEW, "new", dst);
    }
    let event = if form.geosearch() {
        "geosearchstore"
    } else {
        "georadiusstore"
    };
    notify(ctx.fx, t, ctx.conn.db, ZSET, event, dst);
    ctx.fx.key_ready(t, dst);
    Ok(())
}

/// The position of a GEORADIUS / GEORADIUSBYMEMBER STORE or STOREDIST key (the last one), as
/// Redis's `georadiusGetKeys` finds it.
pub fn store_key_pos(a: Args<'_, '_>) -> Option<usize> {
    let mut found = None;
    let mut i = 5;
    while i < a.len() {
        if (is(&a[i], "store") || is(&a[i], "storedist")) && i + 1 < a.len() {
            found = Some(i + 1);
            i += 1;
        }
        i += 1;
    }
    found
}

/// `GEORADIUS key longitude latitude radius unit [options] [STORE key] [STOREDIST key]`
pub fn georadius(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    search(ctx, a, Form::Coords { store: true })
}

/// `GEORADIUS_RO key longitude latitude radius unit [options]`
pub fn georadius_ro(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    search(ctx, a, Form::Coords { store: false })
}

/// `GEORADIUSBYMEMBER key member radius unit [options] [STORE key] [STOREDIST key]`
pub fn georadiusbymember(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    search(ctx, a, Form::Member { store: true })
}

/// `GEORADIUSBYMEMBER_RO key member radius unit [options]`
pub fn georadiusbymember_ro(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    search(ctx, a, Form::Member { store: false })
}

/// `GEOSEARCH key FROMMEMBER m|FROMLONLAT lon lat BYRADIUS r unit|BYBOX w h unit [options]`
pub fn geosearch(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    search(ctx, a, Form::Search)
}

/// `GEOSEARCHSTORE dst src FROMMEMBER m|FROMLONLAT lon lat BYRADIUS r unit|BYBOX w h unit
/// [ASC|DESC] [COUNT n [ANY]] [STOREDIST]`
pub fn geosearchstore(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    search(ctx, a, Form::SearchStore)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_and_coordinates_print_as_redis() {
        assert_eq!(fmt_distance(0.0), "0.0000");
        assert_eq!(fmt_distance(166_274.151_555_89), "166274.1516");
        assert_eq!(fmt_distance(0.000_04), "0.0000");
        assert_eq!(fmt_distance(0.5), "0.5000");
        assert_eq!(fmt_coord(13.361_389_338_970_184), "13.36138933897018433");
        assert_eq!(fmt_coord(-0.0), "0");
        assert_eq!(fmt_coord(2.0), "2");
    }
}
