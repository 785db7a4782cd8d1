package test

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

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
