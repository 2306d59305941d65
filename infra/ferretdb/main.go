// Command troupe-ferretdb runs FerretDB v1 with its SQLite backend as a local
// MongoDB-wire server for development and tests. Production uses real MongoDB.
//
// It embeds the package github.com/FerretDB/FerretDB/ferretdb rather than
// installing cmd/ferretdb, which panics without the version file its release
// build writes.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:27017", "TCP address to listen on")
	dataDir := flag.String("data", "ferretdb-data", "directory for the SQLite files")
	logLevel := flag.String("log-level", "warn", "debug, info, warn or error")
	// WAL with synchronous=NORMAL survives process crashes (a power loss may drop
	// the last commits), and avoids an fsync per write: fine for development and
	// tests, which is all this server is for.
	sqliteParams := flag.String("sqlite-params", "_pragma=synchronous(normal)", "SQLite URI query parameters")
	flag.Parse()

	if err := os.MkdirAll(*dataDir, 0o700); err != nil {
		fail("create data dir: %v", err)
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fail("bad -log-level: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: *listen},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: "file:" + *dataDir + "/?" + *sqliteParams,
	})
	if err != nil {
		fail("start ferretdb: %v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// The launcher waits for this line before it connects.
	fmt.Println("ready " + *listen)
	if err := f.Run(ctx); err != nil && ctx.Err() == nil {
		fail("ferretdb stopped: %v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "troupe-ferretdb: "+format+"\n", args...)
	os.Exit(1)
}
