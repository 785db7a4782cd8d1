package test

import (
	"errors"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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
		Replicas *int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec k8sPodSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type k8sPodSpec struct {
	TerminationGracePeriodSeconds *int64 `yaml:"terminationGracePeriodSeconds"`
	ServiceAccountName            string `yaml:"serviceAccountName"`
	AutomountServiceAccountToken  *bool  `yaml:"automountServiceAccountToken"`
	RestartPolicy                 string `yaml:"restartPolicy"`
	SecurityContext               struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
	} `yaml:"securityContext"`
	Containers []k8sContainer `yaml:"containers"`
}

type k8sJob struct {
	Spec struct {
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec k8sPodSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type k8sServiceAccount struct {
	AutomountServiceAccountToken *bool `yaml:"automountServiceAccountToken"`
}

type k8sPDB struct {
	Spec struct {
		MinAvailable   yaml.Node `yaml:"minAvailable"`   // Kind 0 when absent
		MaxUnavailable yaml.Node `yaml:"maxUnavailable"` // Kind 0 when absent
		Selector       struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
	} `yaml:"spec"`
}

type k8sNetworkPolicy struct {
	Spec struct {
		PodSelector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"podSelector"`
		PolicyTypes []string         `yaml:"policyTypes"`
		Ingress     []k8sNetworkRule `yaml:"ingress"`
		Egress      []k8sNetworkRule `yaml:"egress"`
	} `yaml:"spec"`
}

// k8sNetworkRule is an ingress rule (From) or an egress rule (To).
type k8sNetworkRule struct {
	From  []yaml.Node `yaml:"from"`
	To    []yaml.Node `yaml:"to"`
	Ports []struct {
		Port     yaml.Node `yaml:"port"`
		Protocol string    `yaml:"protocol"`
	} `yaml:"ports"`
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
	Images    []struct {
		Name    string `yaml:"name"`
		NewName string `yaml:"newName"`
		NewTag  string `yaml:"newTag"`
		Digest  string `yaml:"digest"`
	} `yaml:"images"`
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
	flags := commandFlags(t, "run")
	if len(flags) < 10 {
		t.Fatalf("could read only %d flags of `stb run --help`", len(flags))
	}
	return flags
}

// commandFlags returns a subcommand's flags from its --help, as runFlags.
func commandFlags(t *testing.T, command string) map[string][2]string {
	t.Helper()
	out, _ := exec.Command(stbBin, command, "--help").CombinedOutput() // exits non-zero on --help
	re := regexp.MustCompile(`(?m)^\s+--([a-z0-9-]+) \((STB_[A-Z0-9_]+), default (.*)\)$`)
	flags := map[string][2]string{}
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = [2]string{m[2], m[3]}
	}
	if len(flags) == 0 {
		t.Fatalf("could not read the flags of `stb %s --help`:\n%s", command, out)
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
	if tag := c.Image[strings.LastIndex(c.Image, ":")+1:]; tag == "latest" || tag == "" {
		t.Errorf("Deployment: image %q, want a pinned release tag, not latest", c.Image)
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

	// Kustomization lists every manifest but the example Secret and the
	// migrate Job (applied on its own: a Job's pod template is immutable).
	var kz k8sKustomization
	only(t, ms, "Kustomization", &kz)
	checkKustomizeImage(t, kz, c.Image)
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
		case m.meta.Kind == "Job":
			if listed[m.file] {
				t.Errorf("kustomization.yaml must not apply the Job %s: its pod template is immutable, so the next upgrade's apply would fail", m.file)
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

// checkKustomizeImage: the kustomization pins the Deployment's image to a
// release (a tag other than latest, or a digest), the same the Deployment
// names, so that the manifests read as what is deployed.
func checkKustomizeImage(t *testing.T, kz k8sKustomization, image string) {
	t.Helper()
	name, tag, _ := strings.Cut(image, ":")
	found := false
	for _, im := range kz.Images {
		if im.Name != name {
			continue
		}
		found = true
		switch {
		case im.Digest != "":
			if !strings.HasPrefix(im.Digest, "sha256:") {
				t.Errorf("kustomization.yaml: image %s digest %q, want sha256:...", name, im.Digest)
			}
		case im.NewTag == "" || im.NewTag == "latest":
			t.Errorf("kustomization.yaml: image %s newTag %q, want a pinned release tag", name, im.NewTag)
		case im.NewTag != tag:
			t.Errorf("kustomization.yaml: image %s newTag %q, but deployment.yaml names %q: keep them the same", name, im.NewTag, tag)
		}
	}
	if !found {
		t.Errorf("kustomization.yaml: no images entry for %s: pin its tag there", name)
	}
}

// envValue is what the container sets for a flag: its argument, else its
// STB_* variable, else the binary's default.
func envValue(c k8sContainer, flags map[string][2]string, flag string) string {
	if v, ok := flagValue(c.Args, flag); ok {
		return v
	}
	for _, e := range c.Env {
		if e.Name == flags[flag][0] && e.ValueFrom == nil {
			return e.Value
		}
	}
	return flags[flag][1]
}

// addrPort returns the port of host:port, or 0.
func addrPort(addr string) int {
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		return 0
	}
	p, _ := strconv.Atoi(addr[i+1:])
	return p
}

// TestDeployObjects checks the objects around the Deployment: its
// ServiceAccount, PodDisruptionBudget, NetworkPolicy, the migrate Job, and
// that the namespace comes from the kustomization alone.
func TestDeployObjects(t *testing.T) {
	ms := loadManifests(t)
	flags := runFlags(t)
	var dep k8sDeployment
	only(t, ms, "Deployment", &dep)
	pod := dep.Spec.Template.Spec
	podLabels := dep.Spec.Template.Metadata.Labels
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment: want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]

	// Namespace: set by the kustomization, named by no manifest and by no
	// alert expression (kustomize does not rewrite PromQL).
	var kz k8sKustomization
	only(t, ms, "Kustomization", &kz)
	if kz.Namespace == "" {
		t.Errorf("kustomization.yaml: no namespace")
	}
	for _, m := range ms {
		if m.meta.Kind != "Kustomization" && m.meta.Metadata.Namespace != "" {
			t.Errorf("%s names namespace %q: leave it to kustomization.yaml", m, m.meta.Metadata.Namespace)
		}
	}
	var rule prometheusRule
	only(t, ms, "PrometheusRule", &rule)
	nsMatcher := regexp.MustCompile(`namespace\s*(=|!=|=~|!~)\s*"`)
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if nsMatcher.MatchString(r.Expr) {
				t.Errorf("PrometheusRule: %s filters on a namespace written in the expression, which kustomize does not rewrite: %s", r.Alert+r.Record, strings.TrimSpace(r.Expr))
			}
		}
	}

	// ServiceAccount: the pods use it, and nothing mounts a token (stb never
	// calls the Kubernetes API).
	var sa k8sServiceAccount
	saManifest := only(t, ms, "ServiceAccount", &sa)
	if pod.ServiceAccountName != saManifest.meta.Metadata.Name {
		t.Errorf("Deployment: serviceAccountName %q, want %q (%s)", pod.ServiceAccountName, saManifest.meta.Metadata.Name, saManifest.file)
	}
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("ServiceAccount: automountServiceAccountToken must be false")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("Deployment: automountServiceAccountToken must be false")
	}

	// PodDisruptionBudget: selects the pods, and never lets a drain take
	// every replica at once.
	var pdb k8sPDB
	only(t, ms, "PodDisruptionBudget", &pdb)
	if !isSubset(pdb.Spec.Selector.MatchLabels, podLabels) {
		t.Errorf("PodDisruptionBudget: selector %v does not select the pods (%v)", pdb.Spec.Selector.MatchLabels, podLabels)
	}
	replicas := 1
	if dep.Spec.Replicas != nil {
		replicas = *dep.Spec.Replicas
	}
	switch {
	case (pdb.Spec.MinAvailable.Kind == 0) == (pdb.Spec.MaxUnavailable.Kind == 0):
		t.Errorf("PodDisruptionBudget: want exactly one of minAvailable and maxUnavailable")
	case pdb.Spec.MaxUnavailable.Kind != 0:
		if n, err := strconv.Atoi(pdb.Spec.MaxUnavailable.Value); err != nil || n < 1 || (replicas > 1 && n >= replicas) {
			t.Errorf("PodDisruptionBudget: maxUnavailable %q with %d replicas, want a number from 1 to replicas-1", pdb.Spec.MaxUnavailable.Value, replicas)
		}
	default:
		if n, err := strconv.Atoi(pdb.Spec.MinAvailable.Value); err != nil || n < 1 || n >= replicas {
			t.Errorf("PodDisruptionBudget: minAvailable %q with %d replicas, want a number from 1 to replicas-1", pdb.Spec.MinAvailable.Value, replicas)
		}
	}

	// NetworkPolicy: selects the pods; lets in only the public http port,
	// from a namespace selector, never the admin port; lets out DNS, the
	// Kafka brokers' ports and the database's.
	var np k8sNetworkPolicy
	only(t, ms, "NetworkPolicy", &np)
	if !isSubset(np.Spec.PodSelector.MatchLabels, podLabels) {
		t.Errorf("NetworkPolicy: podSelector %v does not select the pods (%v)", np.Spec.PodSelector.MatchLabels, podLabels)
	}
	if !slices.Contains(np.Spec.PolicyTypes, "Ingress") || !slices.Contains(np.Spec.PolicyTypes, "Egress") {
		t.Errorf("NetworkPolicy: policyTypes %v, want Ingress and Egress", np.Spec.PolicyTypes)
	}
	httpPort := addrPort(envValue(c, flags, "http-addr"))
	adminPort := addrPort(envValue(c, flags, "admin-addr"))
	containerPort := func(n yaml.Node) (string, int, bool) {
		for _, p := range c.Ports {
			if portMatches(n, p.Name, p.ContainerPort) {
				return p.Name, p.ContainerPort, true
			}
		}
		return "", 0, false
	}
	httpAllowed := false
	for i, r := range np.Spec.Ingress {
		if len(r.From) == 0 {
			t.Errorf("NetworkPolicy: ingress rule %d has no from: it lets in every source", i)
		}
		if len(r.Ports) == 0 {
			t.Errorf("NetworkPolicy: ingress rule %d has no ports: it opens every port, the admin port too", i)
		}
		for _, p := range r.Ports {
			name, number, ok := containerPort(p.Port)
			switch {
			case !ok:
				t.Errorf("NetworkPolicy: ingress port %q is no port of the container (%+v)", p.Port.Value, c.Ports)
			case adminPort != 0 && number == adminPort:
				t.Errorf("NetworkPolicy: ingress to the admin port %d (%s): the console is reached by port-forward, from nowhere by default", number, name)
			case number == httpPort:
				httpAllowed = true
			}
		}
	}
	if !httpAllowed {
		t.Errorf("NetworkPolicy: no ingress rule lets Prometheus reach the http port %d", httpPort)
	}
	egress := map[string]bool{} // "PROTO/port"
	for _, r := range np.Spec.Egress {
		if len(r.Ports) == 0 {
			egress["any"] = true
		}
		for _, p := range r.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = "TCP"
			}
			egress[proto+"/"+p.Port.Value] = true
		}
	}
	wantOut := map[string]string{"UDP/53": "DNS", "TCP/53": "DNS over TCP"}
	for _, b := range strings.Split(envValue(c, flags, "kafka-brokers"), ",") {
		wantOut["TCP/"+strconv.Itoa(addrPort(b))] = "Kafka broker " + b
	}
	var secret k8sSecret
	only(t, ms, "Secret", &secret)
	if u, err := url.Parse(secret.StringData["database-url"]); err != nil || u.Port() == "" {
		t.Errorf("secret.example.yaml: database-url %q has no port (%v)", secret.StringData["database-url"], err)
	} else {
		wantOut["TCP/"+u.Port()] = "PostgreSQL " + u.Host
	}
	if !egress["any"] {
		for k, what := range wantOut {
			if !egress[k] {
				t.Errorf("NetworkPolicy: no egress to %s (%s)", k, what)
			}
		}
	}

	// The migrate Job: `stb migrate` from the Deployment's image, its
	// variables `stb migrate`'s, the database URL from the Secret.
	var job k8sJob
	only(t, ms, "Job", &job)
	jp := job.Spec.Template.Spec
	if len(jp.Containers) != 1 {
		t.Fatalf("Job: want one container, got %d", len(jp.Containers))
	}
	jc := jp.Containers[0]
	if len(jc.Command) > 0 || len(jc.Args) == 0 || jc.Args[0] != "migrate" {
		t.Errorf("Job: want the image's entrypoint with args [migrate ...], got command %q args %q", jc.Command, jc.Args)
	}
	if jc.Image != c.Image {
		t.Errorf("Job: image %q, but the Deployment runs %q: migrate with the release deployed", jc.Image, c.Image)
	}
	if jp.RestartPolicy != "Never" && jp.RestartPolicy != "OnFailure" {
		t.Errorf("Job: restartPolicy %q, want Never or OnFailure", jp.RestartPolicy)
	}
	if jp.ServiceAccountName != saManifest.meta.Metadata.Name || jp.AutomountServiceAccountToken == nil || *jp.AutomountServiceAccountToken {
		t.Errorf("Job: want serviceAccountName %q without a token", saManifest.meta.Metadata.Name)
	}
	migrateEnv := map[string]bool{}
	for _, f := range commandFlags(t, "migrate") {
		migrateEnv[f[0]] = true
	}
	fromSecret := false
	for _, e := range jc.Env {
		if strings.HasPrefix(e.Name, "STB_") && !migrateEnv[e.Name] {
			t.Errorf("Job: %s is not a variable of `stb migrate` (a misspelt variable is silently ignored)", e.Name)
		}
		if e.Name == "STB_DATABASE_URL" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			fromSecret = true
		}
	}
	if !fromSecret {
		t.Errorf("Job: STB_DATABASE_URL must come from a Secret")
	}
	if jp.SecurityContext.RunAsNonRoot == nil || !*jp.SecurityContext.RunAsNonRoot {
		t.Errorf("Job: the pod must run as non-root")
	}
}
