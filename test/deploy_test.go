package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"gopkg.in/yaml.v3"
)

// The deploy tests check deploy/ against the code: the Kubernetes manifests
// against `stb run`'s flags and HTTP endpoints, and every stb_* metric the
// Grafana dashboard and the PrometheusRule name against what the binary
// exports on /metrics.

const (
	deployDir     = "../deploy"
	manifestsDir  = deployDir + "/kubernetes"
	dashboardPath = deployDir + "/grafana/stb-dashboard.json"
)

// manifest is one YAML document of deploy/kubernetes.
type manifest struct {
	file string
	node *yaml.Node
	meta struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name      string            `yaml:"name"`
			Namespace string            `yaml:"namespace"`
			Labels    map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
	}
}

func (m *manifest) String() string { return m.file + ": " + m.meta.Kind + "/" + m.meta.Metadata.Name }

// loadManifests parses every YAML document of every file in deploy/kubernetes.
func loadManifests(t *testing.T) []*manifest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(manifestsDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no YAML files in %s", manifestsDir)
	}
	var out []*manifest
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(fh)
		for i := 0; ; i++ {
			var n yaml.Node
			err := dec.Decode(&n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: document %d: %v", f, i, err)
			}
			m := &manifest{file: filepath.Base(f), node: &n}
			if err := n.Decode(&m.meta); err != nil {
				t.Fatalf("%s: document %d: %v", f, i, err)
			}
			if m.meta.Kind == "" || m.meta.APIVersion == "" {
				t.Errorf("%s: document %d has no apiVersion or kind", f, i)
			}
			if m.meta.Kind != "Kustomization" && m.meta.Metadata.Name == "" {
				t.Errorf("%s: document %d (%s) has no metadata.name", f, i, m.meta.Kind)
			}
			out = append(out, m)
		}
		fh.Close()
	}
	return out
}

// only returns the one manifest of kind, failing unless there is exactly one.
func only(t *testing.T, ms []*manifest, kind string, into any) *manifest {
	t.Helper()
	var found []*manifest
	for _, m := range ms {
		if m.meta.Kind == kind {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s in %s, found %d", kind, manifestsDir, len(found))
	}
	if err := found[0].node.Decode(into); err != nil {
		t.Fatalf("%s: %v", found[0], err)
	}
	return found[0]
}

type k8sDeployment struct {
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				TerminationGracePeriodSeconds *int64 `yaml:"terminationGracePeriodSeconds"`
				SecurityContext               struct {
					RunAsNonRoot *bool `yaml:"runAsNonRoot"`
				} `yaml:"securityContext"`
				Containers []k8sContainer `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	StartupProbe   *k8sProbe `yaml:"startupProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
	} `yaml:"securityContext"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path string    `yaml:"path"`
		Port yaml.Node `yaml:"port"`
	} `yaml:"httpGet"`
}

type k8sService struct {
	Spec struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string    `yaml:"name"`
			Port       int       `yaml:"port"`
			TargetPort yaml.Node `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type k8sServiceMonitor struct {
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Endpoints []struct {
			Port string `yaml:"port"`
			Path string `yaml:"path"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

type k8sSecret struct {
	StringData map[string]string `yaml:"stringData"`
	Data       map[string]string `yaml:"data"`
}

type k8sKustomization struct {
	Namespace string   `yaml:"namespace"`
	Resources []string `yaml:"resources"`
}

type prometheusRule struct {
	Spec struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Record      string            `yaml:"record"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	} `yaml:"spec"`
}

// runFlags returns `stb run`'s flags from its --help: flag name → (STB_*
// variable, default). It is the binary's own list, so a misspelt variable in
// the Deployment (which stb would silently ignore) is caught here.
func runFlags(t *testing.T) map[string][2]string {
	t.Helper()
	out, _ := exec.Command(stbBin, "run", "--help").CombinedOutput() // exits non-zero on --help
	re := regexp.MustCompile(`(?m)^\s+--([a-z0-9-]+) \((STB_[A-Z0-9_]+), default (.*)\)$`)
	flags := map[string][2]string{}
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = [2]string{m[2], m[3]}
	}
	if len(flags) < 10 {
		t.Fatalf("could not read the flags of `stb run --help`:\n%s", out)
	}
	return flags
}

// flagValue returns the value of --name in args (--name=v or --name v).
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if strings.HasPrefix(a, "--") {
			a = a[1:]
		}
		if v, ok := strings.CutPrefix(a, "-"+name+"="); ok {
			return v, true
		}
		if a == "-"+name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

func portMatches(n yaml.Node, name string, number int) bool {
	return n.Value == name || n.Value == strconv.Itoa(number)
}

func isSubset(sub, of map[string]string) bool {
	if len(sub) == 0 {
		return false
	}
	for k, v := range sub {
		if of[k] != v {
			return false
		}
	}
	return true
}

// TestDeployManifests checks deploy/kubernetes and the dashboard without
// running the bridge.
func TestDeployManifests(t *testing.T) {
	ms := loadManifests(t)
	flags := runFlags(t)
	envFlag := map[string]string{} // STB_* → flag name
	for name, f := range flags {
		envFlag[f[0]] = name
	}

	var dep k8sDeployment
	only(t, ms, "Deployment", &dep)
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment: want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !strings.HasPrefix(c.Image, "ghcr.io/stbridge/stb:") {
		t.Errorf("Deployment: image %q, want ghcr.io/stbridge/stb:<tag>", c.Image)
	}
	if len(c.Command) > 0 || len(c.Args) == 0 || c.Args[0] != "run" {
		t.Errorf("Deployment: want the image's entrypoint with args [run ...], got command %q args %q", c.Command, c.Args)
	}
	if !isSubset(dep.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels) {
		t.Errorf("Deployment: selector %v does not select its pod labels %v", dep.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels)
	}

	// Environment: every STB_* variable is a flag of `stb run`; values
	// referring to $(VAR) refer to variables defined before them (the only
	// ones the kubelet expands); the effective value of a flag is the
	// command line's, else the variable's, else the default.
	env := map[string]string{}
	secretRefs := map[string][2]string{} // variable → (secret, key)
	defined := map[string]bool{}
	refRE := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "STB_") {
			if _, ok := envFlag[e.Name]; !ok {
				t.Errorf("Deployment: %s is not a variable of `stb run` (a misspelt variable is silently ignored)", e.Name)
			}
		}
		for _, m := range refRE.FindAllStringSubmatch(e.Value, -1) {
			if !defined[m[1]] {
				t.Errorf("Deployment: %s refers to $(%s), which is not defined before it", e.Name, m[1])
			}
		}
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			secretRefs[e.Name] = [2]string{e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key}
		}
		env[e.Name] = e.Value
		defined[e.Name] = true
	}
	for _, a := range c.Args {
		for _, m := range refRE.FindAllStringSubmatch(a, -1) {
			if !defined[m[1]] {
				t.Errorf("Deployment: argument %q refers to $(%s), which is not defined", a, m[1])
			}
		}
	}
	effective := func(flag string) string {
		if v, ok := flagValue(c.Args, flag); ok {
			return v
		}
		if v, ok := env[flags[flag][0]]; ok {
			return v
		}
		return flags[flag][1]
	}

	// Graceful shutdown: the kubelet's SIGKILL must come after stb's own
	// shutdown budget, or the final offset commit is lost.
	shutdown, err := time.ParseDuration(effective("shutdown-timeout"))
	if err != nil {
		t.Fatalf("Deployment: shutdown timeout: %v", err)
	}
	if pod.TerminationGracePeriodSeconds == nil {
		t.Errorf("Deployment: terminationGracePeriodSeconds is not set (default 30s), want more than the shutdown timeout %v", shutdown)
	} else if grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second; grace <= shutdown {
		t.Errorf("Deployment: terminationGracePeriodSeconds %v is not longer than --shutdown-timeout %v", grace, shutdown)
	} else {
		t.Logf("terminationGracePeriodSeconds %v > shutdown timeout %v", grace, shutdown)
	}

	// Secrets: the database URL and the Kafka SASL password come from the
	// Secret, whose example holds every key referenced.
	if _, ok := secretRefs["STB_DATABASE_URL"]; !ok {
		t.Errorf("Deployment: STB_DATABASE_URL must come from a Secret (valueFrom.secretKeyRef)")
	}
	props := effective("kafka-property")
	if m := regexp.MustCompile(`sasl\.password=([^,]*)`).FindStringSubmatch(props); m == nil {
		t.Errorf("Deployment: no sasl.password in the Kafka properties %q", props)
	} else if ref := refRE.FindStringSubmatch(m[1]); ref == nil || m[1] != ref[0] {
		t.Errorf("Deployment: sasl.password must be $(VAR) of a Secret, got %q", m[1])
	} else if _, ok := secretRefs[ref[1]]; !ok {
		t.Errorf("Deployment: sasl.password comes from $(%s), which is not from a Secret", ref[1])
	}
	var secret k8sSecret
	secretManifest := only(t, ms, "Secret", &secret)
	for v, ref := range secretRefs {
		if ref[0] != secretManifest.meta.Metadata.Name {
			t.Errorf("Deployment: %s from Secret %q, but %s is Secret %q", v, ref[0], secretManifest.file, secretManifest.meta.Metadata.Name)
		}
		if _, ok := secret.StringData[ref[1]]; !ok {
			if _, ok := secret.Data[ref[1]]; !ok {
				t.Errorf("Deployment: %s from key %q, which %s does not have", v, ref[1], secretManifest.file)
			}
		}
	}

	// HTTP: one port named http where stb listens, probes on it.
	httpAddr := effective("http-addr")
	_, portStr, _ := strings.Cut(httpAddr, ":")
	httpPort, err := strconv.Atoi(portStr)
	if err != nil {
		t.Fatalf("Deployment: --http-addr %q has no port", httpAddr)
	}
	hasPort := false
	for _, p := range c.Ports {
		if p.Name == "http" && p.ContainerPort == httpPort {
			hasPort = true
		}
	}
	if !hasPort {
		t.Errorf("Deployment: no container port named http on %d (--http-addr %q)", httpPort, httpAddr)
	}
	for _, p := range []struct {
		name  string
		probe *k8sProbe
		path  string
	}{{"livenessProbe", c.LivenessProbe, "/healthz"}, {"readinessProbe", c.ReadinessProbe, "/readyz"}} {
		switch {
		case p.probe == nil || p.probe.HTTPGet == nil:
			t.Errorf("Deployment: no %s with httpGet", p.name)
		case p.probe.HTTPGet.Path != p.path:
			t.Errorf("Deployment: %s on %q, want %q", p.name, p.probe.HTTPGet.Path, p.path)
		case !portMatches(p.probe.HTTPGet.Port, "http", httpPort):
			t.Errorf("Deployment: %s on port %q, want http or %d", p.name, p.probe.HTTPGet.Port.Value, httpPort)
		}
	}
	if p := c.StartupProbe; p != nil && (p.HTTPGet == nil || p.HTTPGet.Path != "/healthz") {
		t.Errorf("Deployment: the startupProbe must check /healthz (ready needs partitions, which may take a rebalance)")
	}

	// Workers: the default pool size counts the node's CPUs, so it is set to
	// 2 per CPU of the limit, like the default on a machine of that size.
	cpu := c.Resources.Limits["cpu"]
	if cpu == "" {
		t.Errorf("Deployment: no CPU limit")
	} else if cpus, err := parseCPU(cpu); err != nil {
		t.Errorf("Deployment: CPU limit: %v", err)
	} else if pool, err := strconv.Atoi(env["STB_DB_POOL_SIZE"]); err != nil {
		t.Errorf("Deployment: STB_DB_POOL_SIZE must be set (the default counts the node's CPUs): %v", err)
	} else if want := max(4, int(2*cpus)); pool != want {
		t.Errorf("Deployment: STB_DB_POOL_SIZE %d for a CPU limit of %s, want %d (2 per CPU, at least 4)", pool, cpu, want)
	}
	if c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" || c.Resources.Requests["cpu"] == "" {
		t.Errorf("Deployment: want CPU and memory requests and a memory limit, got %+v", c.Resources)
	}
	if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("Deployment: the pod must run as non-root")
	}
	if sc := c.SecurityContext; sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("Deployment: want readOnlyRootFilesystem true and allowPrivilegeEscalation false")
	}

	// Service and ServiceMonitor reach the pods' http port.
	var svc k8sService
	svcManifest := only(t, ms, "Service", &svc)
	if !isSubset(svc.Spec.Selector, dep.Spec.Template.Metadata.Labels) {
		t.Errorf("Service: selector %v does not select the pods (%v)", svc.Spec.Selector, dep.Spec.Template.Metadata.Labels)
	}
	svcPort := ""
	for _, p := range svc.Spec.Ports {
		if portMatches(p.TargetPort, "http", httpPort) {
			svcPort = p.Name
		}
	}
	if svcPort == "" {
		t.Errorf("Service: no port targets the pods' http port")
	}
	var sm k8sServiceMonitor
	only(t, ms, "ServiceMonitor", &sm)
	if !isSubset(sm.Spec.Selector.MatchLabels, svcManifest.meta.Metadata.Labels) {
		t.Errorf("ServiceMonitor: selector %v does not select the Service (labels %v)", sm.Spec.Selector.MatchLabels, svcManifest.meta.Metadata.Labels)
	}
	if len(sm.Spec.Endpoints) == 0 {
		t.Errorf("ServiceMonitor: no endpoints")
	}
	for _, e := range sm.Spec.Endpoints {
		if e.Port != svcPort || (e.Path != "" && e.Path != "/metrics") {
			t.Errorf("ServiceMonitor: endpoint port %q path %q, want port %q path /metrics", e.Port, e.Path, svcPort)
		}
	}

	// Kustomization lists every manifest but the example Secret.
	var kz k8sKustomization
	only(t, ms, "Kustomization", &kz)
	listed := map[string]bool{}
	for _, r := range kz.Resources {
		listed[r] = true
		if _, err := os.Stat(filepath.Join(manifestsDir, r)); err != nil {
			t.Errorf("kustomization.yaml: resource %s: %v", r, err)
		}
	}
	for _, m := range ms {
		switch {
		case m.meta.Kind == "Kustomization":
		case m.meta.Kind == "Secret":
			if listed[m.file] {
				t.Errorf("kustomization.yaml must not apply the example Secret %s", m.file)
			}
		case !listed[m.file]:
			t.Errorf("kustomization.yaml does not list %s", m.file)
		}
	}

	// Alerts: named, with an expression, a severity and a summary.
	var rule prometheusRule
	only(t, ms, "PrometheusRule", &rule)
	seen := map[string]bool{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			switch {
			case name == "" || strings.TrimSpace(r.Expr) == "":
				t.Errorf("PrometheusRule: group %s has a rule without a name or an expression", g.Name)
			case seen[name]:
				t.Errorf("PrometheusRule: %s defined twice", name)
			case r.Alert != "" && (r.Labels["severity"] != "warning" && r.Labels["severity"] != "critical"):
				t.Errorf("PrometheusRule: %s has severity %q, want warning or critical", name, r.Labels["severity"])
			case r.Alert != "" && r.Annotations["summary"] == "":
				t.Errorf("PrometheusRule: %s has no summary", name)
			}
			seen[name] = true
		}
	}

	// Dashboard: valid, and it shows every metric the README lists.
	d := loadDashboard(t)
	used := map[string]bool{}
	for _, ref := range d.refs {
		used[ref.metric] = true
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	listedMetrics := regexp.MustCompile("(?m)^\\| `(stb_[a-z0-9_]+)`(?: / `(stb_[a-z0-9_]+)`)?").FindAllStringSubmatch(string(readme), -1)
	if len(listedMetrics) == 0 {
		t.Errorf("README.md lists no metrics")
	}
	for _, m := range listedMetrics {
		for _, name := range m[1:] {
			if name != "" && !used[name] && !used[name+"_bucket"] && !used[name+"_sum"] {
				t.Errorf("dashboard: no panel shows %s (listed in README.md)", name)
			}
		}
	}
}

func parseCPU(s string) (float64, error) {
	if m, ok := strings.CutSuffix(s, "m"); ok {
		n, err := strconv.Atoi(m)
		return float64(n) / 1000, err
	}
	return strconv.ParseFloat(s, 64)
}

// metricRef is one stb_* name in an expression, and where it is.
type metricRef struct {
	metric, where string
}

var metricNameRE = regexp.MustCompile(`\bstb_[a-z0-9_]+`)

func metricRefs(expr, where string) []metricRef {
	var out []metricRef
	for _, m := range metricNameRE.FindAllString(expr, -1) {
		out = append(out, metricRef{m, where})
	}
	return out
}

type dashboard struct {
	refs []metricRef
}

// loadDashboard parses the dashboard, checks its structure and returns the
// metrics its panels and variables query.
func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		ID      int    `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		UID           string            `json:"uid"`
		Title         string            `json:"title"`
		SchemaVersion int               `json:"schemaVersion"`
		Panels        []json.RawMessage `json:"panels"`
		Templating    struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("dashboard: uid %q, title %q, schemaVersion %d: want a uid, a title and schemaVersion >= 36", d.UID, d.Title, d.SchemaVersion)
	}
	var out dashboard
	ids := map[int]bool{}
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, rp := range ps {
			var p panel
			if err := json.Unmarshal(rp, &p); err != nil {
				t.Fatalf("dashboard: panel: %v", err)
			}
			if ids[p.ID] {
				t.Errorf("dashboard: panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			n := 0
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) != "" {
					n++
				}
				out.refs = append(out.refs, metricRefs(tg.Expr, fmt.Sprintf("dashboard panel %q", p.Title))...)
			}
			if n == 0 {
				t.Errorf("dashboard: panel %q has no query", p.Title)
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		out.refs = append(out.refs, metricRefs(v.Definition, fmt.Sprintf("dashboard variable %q", v.Name))...)
	}
	if len(out.refs) == 0 {
		t.Fatalf("dashboard: no stb_* metric in any query")
	}
	return out
}

// ruleRefs returns the stb_* metrics of every PrometheusRule expression.
func ruleRefs(t *testing.T) []metricRef {
	t.Helper()
	var out []metricRef
	for _, m := range loadManifests(t) {
		if m.meta.Kind != "PrometheusRule" {
			continue
		}
		var r prometheusRule
		if err := m.node.Decode(&r); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		for _, g := range r.Spec.Groups {
			for _, rule := range g.Rules {
				out = append(out, metricRefs(rule.Expr, "alert "+rule.Alert+rule.Record)...)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no stb_* metric in any PrometheusRule expression")
	}
	return out
}

// waitHealthy waits until the bridge answers /healthz.
func waitHealthy(t *testing.T, b *bridge, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(b.httpURL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if !b.running() {
			t.Fatalf("the bridge exited: %v", b.err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bridge did not answer /healthz within %v: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metricFamilies returns the families on a /metrics page: name → type.
// client_golang prints a family only once it has a series, so a labelled
// family appears only after its first observation.
func metricFamilies(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %v %s", err, resp.Status)
	}
	fams := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ := strings.Cut(rest, " ")
			if _, ok := fams[name]; !ok {
				fams[name] = "untyped"
			}
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(rest)
			if len(f) == 2 {
				fams[f[0]] = f[1]
			}
		}
	}
	return fams
}

// exported reports whether a name used in PromQL is a series of one of fams:
// a family itself, or a histogram's _bucket, _sum or _count.
func exported(name string, fams map[string]string) bool {
	if _, ok := fams[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			switch fams[base] {
			case "histogram":
				return true
			case "summary":
				return suffix != "_bucket"
			}
		}
	}
	return false
}

// TestDeployMetricsExist runs the binary until every family it has shows on
// /metrics, then checks that each stb_* metric the dashboard and the alerts
// name is one of them.
func TestDeployMetricsExist(t *testing.T) {
	refs := append(loadDashboard(t).refs, ruleRefs(t)...)
	wanted := map[string][]string{} // metric → where it is used
	for _, r := range refs {
		if !slices.Contains(wanted[r.metric], r.where) {
			wanted[r.metric] = append(wanted[r.metric], r.where)
		}
	}
	names := make([]string, 0, len(wanted))
	for n := range wanted {
		names = append(names, n)
	}
	sort.Strings(names)
	missing := func(fams map[string]string) []string {
		var out []string
		for _, n := range names {
			if !exported(n, fams) {
				out = append(out, n)
			}
		}
		return out
	}

	e := newEnv(t, 1)
	fams := map[string]string{}
	merge := func(f map[string]string) {
		for k, v := range f {
			fams[k] = v
		}
	}

	// 1. A small simulation, written and verified: the histograms and the
	// labelled counters of the normal path get their first series.
	b := e.startBridge()
	exp := e.simulate("deploy", "--hubs", "3", "--clusters", "2", "--generations", "2", "--seed", "5")
	e.waitVerified(exp, time.Minute)
	merge(metricFamilies(t, b.httpURL))
	b.stop(30 * time.Second)

	// 2. The failure paths, on a second run from the stored offsets: a
	// bundle whose dependency never comes is dead-lettered by a worker
	// (stb_dispatcher_dead_letters_total), and a bootstrap broker that
	// refuses connections, which librdkafka connects to at once without
	// sparse connections, makes it report an error
	// (stb_transport_kafka_errors_total). A short dependency timeout here
	// cannot touch the simulation, which step 1 finished.
	dead := freePort(t) // nothing listens there
	b = e.startBridge("--dependency-timeout", "1s", "--kafka-brokers", e.brokers+","+dead,
		"--kafka-property", "enable.sparse.connections=false")
	waitHealthy(t, b, 30*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers), kgo.DefaultProduceTopic("status"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	orphan := &kgo.Record{
		Key:   []byte("hub-orphan"),
		Value: []byte(`{"objects":[{"policyId":"p1","nonCompliantClusters":["c1"],"unknownComplianceClusters":[]}]}`),
		Headers: []kgo.RecordHeader{
			{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte("deploy-orphan")},
			{Key: "ce_source", Value: []byte("hub-orphan")}, {Key: "ce_type", Value: []byte("io.stb.status.v1.compliance")},
			{Key: "ce_time", Value: []byte(time.Now().UTC().Format(time.RFC3339Nano))},
			{Key: "ce_extversion", Value: []byte("1.1")}, {Key: "ce_extdependencyversion", Value: []byte("1.1")},
			{Key: "content-type", Value: []byte("application/json")},
		},
	}
	if err := cl.ProduceSync(context.Background(), orphan).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Scrape until nothing is missing: the dead letter takes the dependency
	// timeout, and the families fed by librdkafka's statistics (lag, high
	// watermark, round-trip time) appear with the first statistics, after
	// statistics.interval.ms (5s). A metric stb does not have costs the
	// whole wait.
	deadline := time.Now().Add(30 * time.Second)
	for {
		merge(metricFamilies(t, b.httpURL))
		if len(missing(fams)) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	b.stop(30 * time.Second)

	var stb []string
	for f := range fams {
		if strings.HasPrefix(f, "stb_") {
			stb = append(stb, f)
		}
	}
	sort.Strings(stb)
	t.Logf("stb exports %d stb_* families: %s", len(stb), strings.Join(stb, " "))
	t.Logf("the dashboard and the alerts name %d stb_* metrics", len(names))
	gone := missing(fams)
	for _, n := range gone {
		t.Errorf("MISSING METRIC %s: not on stb's /metrics; used by %s", n, strings.Join(wanted[n], ", "))
	}
	if len(gone) > 0 {
		t.Errorf("%d of %d metrics named by deploy/ are not exported by stb: %s", len(gone), len(names), strings.Join(gone, " "))
	}
}

// TestDeployEnvironment runs `stb run` with the Deployment's own environment
// and requires it to become ready, then to stop within the pod's grace
// period: every value the manifest sets is one the binary accepts and runs
// with. The values that point at real infrastructure or Secrets (brokers,
// database, Kafka properties, HTTP address) are the test's, given on the
// command line, which wins over the environment.
func TestDeployEnvironment(t *testing.T) {
	var dep k8sDeployment
	only(t, loadManifests(t), "Deployment", &dep)
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 || pod.TerminationGracePeriodSeconds == nil {
		t.Fatalf("Deployment: want one container and terminationGracePeriodSeconds")
	}
	skip := map[string]bool{"STB_KAFKA_BROKERS": true, "STB_KAFKA_PROPERTY": true, "STB_HTTP_ADDR": true, "STB_DATABASE_URL": true}
	var set []string
	for _, ev := range pod.Containers[0].Env {
		if ev.ValueFrom != nil || skip[ev.Name] || strings.Contains(ev.Value, "$(") {
			continue
		}
		t.Setenv(ev.Name, ev.Value) // inherited by the bridge process
		set = append(set, ev.Name+"="+ev.Value)
	}
	t.Logf("environment from the Deployment: %s", strings.Join(set, " "))

	e := newEnv(t, 2)
	b := e.startBridge()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(b.httpURL + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			err = fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
		}
		if !b.running() {
			t.Fatalf("stb run exited with the Deployment's environment (%v); log:\n%s", b.err, tail(b.log.String(), 20))
		}
		if time.Now().After(deadline) {
			t.Fatalf("stb run with the Deployment's environment never became ready: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	b.stop(grace)
	t.Logf("ready with the Deployment's environment, stopped cleanly within %v of SIGTERM", grace)
}
