package work

import (
	"strconv"
	"time"
)

// snowflakeEpoch is bwmarrin/snowflake's default epoch (Twitter's, in
// milliseconds), which the agent codec's generator uses.
const snowflakeEpoch = 1288834974657

// SequenceID returns the sequence id the agent codec's snowflake
// generator (node 1) makes at time t for the step-th id of that
// millisecond, in decimal as the sequenceid extension carries it: 41 bits
// of milliseconds since the epoch, 10 of node, 12 of step. The simulator
// and tests make their ids with it.
func SequenceID(t time.Time, step int64) string {
	ms := t.UnixMilli() - snowflakeEpoch
	return strconv.FormatInt(ms<<22|snowflakeNode<<12|step&0xfff, 10)
}
