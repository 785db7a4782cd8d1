package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What the benchmark measures of processes, read from /proc (Linux only,
// like the machines the bridge runs on): resident memory and CPU time of
// this process (the bridge under test: the broker and the producers run
// as child processes so that they are not counted), of a child, and of
// the PostgreSQL server.

// clockTicks is the unit of the CPU times in /proc/<pid>/stat (USER_HZ),
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// selfCPU returns the user and system CPU time this process has used, all
// threads included, children excluded.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// selfRSS returns this process's resident set size in bytes (VmRSS).
func selfRSS() int64 { return rssOf("self") }

// rssOf returns the resident set size of process pid ("self" or a
// number), 0 when it cannot be read.
func rssOf(pid string) int64 {
	data, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return 0
	}
	return statusRSS(data)
}

// statusRSS parses the VmRSS line of a /proc/<pid>/status file, 0 without
// one (a kernel thread, a zombie).
func statusRSS(status []byte) int64 {
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v) // "123456 kB"
			if len(f) == 2 && f[1] == "kB" {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

// cpuOf returns the user and system CPU time of process pid, 0 when it
// cannot be read (the process has exited).
func cpuOf(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	return statCPU(data)
}

// statCPU parses utime and stime (fields 14 and 15) of a /proc/<pid>/stat
// line. The command name (field 2) is in parentheses and may hold spaces,
// so fields are counted from the last ')'.
func statCPU(stat []byte) time.Duration {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:])) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// postgresCPU returns the CPU time of every process named "postgres" on
// this machine: the server and its backends. Backends that exited take
// their time with them, so only differences over a window in which the
// bridge's connections stay open are meaningful.
func postgresCPU() time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		total += cpuOf(pid)
	}
	return total
}

// rssSample is one reading of resident memory.
type rssSample struct {
	At  time.Duration `json:"at"` // since the start of the window
	RSS int64         `json:"rss"`
}

// rssTrend summarises samples taken over a window: the least-squares slope
// and the first, last and largest value.
type rssTrend struct {
	First, Last, Max int64
	// SlopePerMinute is the fitted growth in bytes per minute.
	SlopePerMinute float64
}

func trendOf(samples []rssSample) rssTrend {
	if len(samples) == 0 {
		return rssTrend{}
	}
	t := rssTrend{First: samples[0].RSS, Last: samples[len(samples)-1].RSS}
	var sx, sy, sxx, sxy float64
	for _, s := range samples {
		t.Max = max(t.Max, s.RSS)
		x, y := s.At.Minutes(), float64(s.RSS)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	n := float64(len(samples))
	if d := n*sxx - sx*sx; d > 0 {
		t.SlopePerMinute = (n*sxy - sx*sy) / d
	}
	return t
}

// mib formats bytes as MiB with one decimal.
func mib(n float64) string { return fmt.Sprintf("%.1fMiB", n/(1<<20)) }

// loadAverage returns the one-minute load average of the machine: other
// work running beside the bench shows in it, and in every figure.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// goLiveHeap returns the Go heap that was live after the last garbage
// collection: what RSS is made of on the Go side, without the garbage.
func goLiveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// goHeld returns what the Go runtime holds from the OS and has not handed
// back: all its memory classes but the heap spans it released.
func goHeld() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64()) - int64(s[1].Value.Uint64())
}
