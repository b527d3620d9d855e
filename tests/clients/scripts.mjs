// The script helpers of the two Node clients, against the server on 127.0.0.1:<port>:
// ioredis `defineCommand` and node-redis `defineScript`. Each first runs by EVALSHA, gets
// NOSCRIPT (nothing loaded yet, and again after SCRIPT FLUSH) and falls back to EVAL; the
// results and a script's error reply are checked. Prints one "ok <check>" line per check;
// exits 1 at the first failure. Usage: node scripts.mjs <port>
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { createClient, defineScript } from 'redis';

const port = Number(process.argv[2]);
const CAPPED = `local v = redis.call('INCR', KEYS[1])
if v > tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) return tonumber(ARGV[1]) end
return v`;
const FAILS = "return redis.error_reply('LIMIT over the cap')";

function ok(what) { console.log(`ok ${what}`); }

async function ioredis() {
  const r = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1, lazyConnect: true });
  await r.connect();
  try {
    r.defineCommand('incrCapped', { numberOfKeys: 1, lua: CAPPED });
    r.defineCommand('fails', { numberOfKeys: 0, lua: FAILS });
    await r.del('io:c');
    const got = [];
    for (let i = 0; i < 4; i++) got.push(await r.incrCapped('io:c', 3));
    assert.deepEqual(got, [1, 2, 3, 3]);
    ok('ioredis defineCommand (EVALSHA, NOSCRIPT fallback to EVAL)');
    // In a pipeline ioredis loads the script first (SCRIPT LOAD) and sends EVALSHA.
    await r.script('FLUSH');
    const replies = await r.pipeline().del('io:p').incrCapped('io:p', 1).incrCapped('io:p', 1).exec();
    assert.deepEqual(replies.map(([e, v]) => [e, v]), [[null, 0], [null, 1], [null, 1]]);
    ok('ioredis defineCommand in a pipeline after SCRIPT FLUSH');
    await assert.rejects(r.fails(), (e) => e.message === 'LIMIT over the cap');
    ok('ioredis defineCommand error reply');
  } finally {
    r.disconnect();
  }
}

async function nodeRedis() {
  const client = createClient({
    url: `redis://127.0.0.1:${port}`,
    scripts: {
      incrCapped: defineScript({
        NUMBER_OF_KEYS: 1,
        SCRIPT: CAPPED,
        parseCommand(parser, key, cap) { parser.pushKey(key); parser.push(String(cap)); },
        transformReply: (reply) => reply,
      }),
      fails: defineScript({
        NUMBER_OF_KEYS: 0,
        SCRIPT: FAILS,
        parseCommand() {},
        transformReply: (reply) => reply,
      }),
    },
  });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.scriptFlush();
    await client.del('nr:c');
    const got = [];
    for (let i = 0; i < 4; i++) got.push(await client.incrCapped('nr:c', 2));
    assert.deepEqual(got, [1, 2, 2, 2]);
    ok('node-redis defineScript (EVALSHA, NOSCRIPT fallback to EVAL)');
    const multi = await client.multi().del('nr:m').incrCapped('nr:m', 5).incrCapped('nr:m', 5).exec();
    assert.deepEqual(multi, [0, 1, 2]);
    ok('node-redis defineScript in MULTI');
    await assert.rejects(client.fails(), (e) => e.message === 'LIMIT over the cap');
    ok('node-redis defineScript error reply');
  } finally {
    await client.quit();
  }
}

try {
  await ioredis();
  await nodeRedis();
} catch (e) {
  console.error(`FAILED: ${e.stack || e}`);
  process.exit(1);
}
