package main

import (
	"context"
	"fmt"
	"os"

	"github.com/stbridge/stb/pkg/broker"
)

func kafkaCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("kafka", "Run an embedded Kafka broker (franz-go's kfake) on 127.0.0.1 for local use and demos.\nIt speaks the real Kafka protocol over TCP; with --data-dir its log survives restarts.")
	port := fs.Int("port", 9092, "TCP port on 127.0.0.1")
	dataDir := fs.String("data-dir", ".stb/kafka", "directory holding the broker's data; empty keeps it in memory")
	var topics []string
	fs.Var(newListValue(&topics, []string{"status"}), "topics", "topics to create, comma-separated")
	partitions := fs.Int("partitions", 8, "partitions per created topic")
	level := fs.String("log-level", "info", "log level")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	logger, err := newLogger(*level, "console")
	if err != nil {
		return err
	}
	b, err := broker.Start(broker.Config{Port: *port, DataDir: *dataDir, Topics: topics, Partitions: int32(*partitions)}, logger)
	if err != nil {
		return err
	}
	defer b.Close()
	fmt.Fprintf(os.Stderr, "kafka broker listening on %s (cluster id %s, data dir %q); Ctrl-C stops it\n", b.Addr(), b.ClusterID(), *dataDir)
	<-ctx.Done()
	return nil
}
