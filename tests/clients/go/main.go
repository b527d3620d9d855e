// go-redis's Script helper against the server on 127.0.0.1:<port>: Script.Run (EVALSHA, then
// EVAL on NOSCRIPT), Load/Exists, RunRO (EVALSHA_RO) and an error reply. Prints one
// "ok <check>" line per check; exits 1 at the first failure. Usage: go run . <port>
package main

import (
	"context"
	"fmt"
	"os"
	"reflect"

	"github.com/redis/go-redis/v9"
)

const capped = `local v = redis.call('INCR', KEYS[1])
if v > tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) return tonumber(ARGV[1]) end
return v`

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "FAILED: "+format+"\n", a...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: go run . <port>")
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + os.Args[1], MaxRetries: -1, Protocol: 2})
	defer rdb.Close()

	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		fail("SCRIPT FLUSH: %v", err)
	}
	rdb.Del(ctx, "go:c")
	script := redis.NewScript(capped)
	var got []int64
	for i := 0; i < 4; i++ {
		n, err := script.Run(ctx, rdb, []string{"go:c"}, 3).Int64()
		if err != nil {
			fail("Script.Run: %v", err)
		}
		got = append(got, n)
	}
	if !reflect.DeepEqual(got, []int64{1, 2, 3, 3}) {
		fail("Script.Run results %v", got)
	}
	fmt.Println("ok go-redis Script.Run (EVALSHA, NOSCRIPT fallback to EVAL)")

	exists, err := script.Exists(ctx, rdb).Result()
	if err != nil || !reflect.DeepEqual(exists, []bool{true}) {
		fail("Script.Exists: %v %v", exists, err)
	}
	ro := redis.NewScript(`return redis.call('GET', KEYS[1])`)
	if err := ro.Load(ctx, rdb).Err(); err != nil {
		fail("Script.Load: %v", err)
	}
	v, err := ro.RunRO(ctx, rdb, []string{"go:c"}).Text()
	if err != nil || v != "3" {
		fail("Script.RunRO: %q %v", v, err)
	}
	err = redis.NewScript(`redis.call('SET', KEYS[1], 'x')`).RunRO(ctx, rdb, []string{"go:c"}).Err()
	if err == nil {
		fail("a write in EVAL_RO succeeded")
	}
	fmt.Println("ok go-redis Script.Load, Exists, RunRO (EVALSHA_RO)")

	err = redis.NewScript(`return redis.error_reply('LIMIT over the cap')`).Run(ctx, rdb, nil).Err()
	if err == nil || err.Error() != "LIMIT over the cap" {
		fail("error reply: %v", err)
	}
	fmt.Println("ok go-redis Script.Run error reply")
}
