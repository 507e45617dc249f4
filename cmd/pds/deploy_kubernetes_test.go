package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// kubernetesObjects are the objects of deploy/kubernetes, by kind.
type kubernetesObjects struct {
	deployments []appsv1.Deployment
	jobs        []batchv1.Job
	services    []corev1.Service
	secrets     []corev1.Secret
}

// readKubernetes decodes every document of deploy/kubernetes/*.yaml into
// the API's own types, strictly: a field the type does not have, or one
// given twice, fails.
func readKubernetes(t *testing.T) kubernetesObjects {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(deployDir, "kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/kubernetes: %v", err)
	}
	var objs kubernetesObjects
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			where := fmt.Sprintf("%s, document %d", filepath.Base(file), i+1)
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			strict := func(gv string, into any) {
				if meta.APIVersion != gv {
					t.Errorf("%s: %s is %s, not %s", where, meta.Kind, gv, meta.APIVersion)
				}
				if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
					t.Errorf("%s: %v", where, err)
				}
			}
			switch meta.Kind {
			case "Deployment":
				var d appsv1.Deployment
				strict("apps/v1", &d)
				objs.deployments = append(objs.deployments, d)
			case "Job":
				var j batchv1.Job
				strict("batch/v1", &j)
				objs.jobs = append(objs.jobs, j)
			case "Service":
				var s corev1.Service
				strict("v1", &s)
				objs.services = append(objs.services, s)
			case "Secret":
				var s corev1.Secret
				strict("v1", &s)
				objs.secrets = append(objs.secrets, s)
			default:
				t.Errorf("%s: a %q, which this test does not know", where, meta.Kind)
			}
		}
	}
	if len(objs.deployments) != 1 || len(objs.jobs) != 1 || len(objs.services) != 1 {
		t.Fatalf("deploy/kubernetes holds %d Deployments, %d Jobs, %d Services; want one of each",
			len(objs.deployments), len(objs.jobs), len(objs.services))
	}
	return objs
}

// containerEnv reads a container's environment for commandSettings: a
// value from a Secret must name a key the Secret of the examples has.
func containerEnv(t *testing.T, where string, c corev1.Container, secrets []corev1.Secret) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref == nil || !secretHas(secrets, ref.Name, ref.Key) {
			t.Errorf("%s: %s comes from %+v, not from a key of the Secret in deploy/kubernetes", where, e.Name, e.ValueFrom)
		}
	}
	return env
}

func secretHas(secrets []corev1.Secret, name, key string) bool {
	for _, s := range secrets {
		if s.Name == name {
			_, inString := s.StringData[key]
			_, inData := s.Data[key]
			return inString || inData
		}
	}
	return false
}

// TestDeployExamplesKubernetes holds deploy/kubernetes to the binary: the
// Deployment runs pds serve --migrate=false with flags and variables it
// has, its port is the one pds serve listens on, its probes ask /readyz
// and /healthz there, often enough to notice the drain and patiently
// enough for the database's deadline, and Kubernetes waits out the drain
// and the grace before it kills a pod; the Job runs pds migrate with the
// same image; the Service sends traffic to the servers' port, and to no
// migrate pod.
func TestDeployExamplesKubernetes(t *testing.T) {
	t.Parallel()
	objs := readKubernetes(t)
	dep, job, svc := objs.deployments[0], objs.jobs[0], objs.services[0]

	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("the Deployment's pods run %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	cfg, _ := commandSettings(t, "the Deployment", append(c.Command, c.Args...), containerEnv(t, "the Deployment", c, objs.secrets))
	if len(c.Command) != 0 {
		t.Errorf("the Deployment replaces the image's entrypoint (/pds) with %v", c.Command)
	}
	if cfg.migrate {
		t.Error("the Deployment runs pds serve without --migrate=false")
	}
	port := addrPort(t, cfg)
	var portName string
	for _, p := range c.Ports {
		if strconv.Itoa(int(p.ContainerPort)) == port {
			portName = p.Name
		}
	}
	if portName == "" {
		t.Fatalf("the container declares ports %+v; pds serve listens on %s", c.Ports, cfg.addr)
	}
	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || !samePort(p.HTTPGet.Port, portName, port) {
			t.Errorf("%s probe %s, want GET %s on port %s", name, describeProbe(p), path, port)
			return
		}
		if timeout := time.Duration(p.TimeoutSeconds) * time.Second; timeout < cfg.databaseTimeout {
			t.Errorf("%s probe gives up after %s, before the database's deadline (%s)", name, timeout, cfg.databaseTimeout)
		}
	}
	probe("readiness", c.ReadinessProbe, "/readyz")
	probe("liveness", c.LivenessProbe, "/healthz")
	if r := c.ReadinessProbe; r != nil {
		if noticed := time.Duration(r.PeriodSeconds*r.FailureThreshold) * time.Second; noticed > cfg.shutdownDrain {
			t.Errorf("the readiness probe notices a draining pod after up to %s, past the drain (%s)", noticed, cfg.shutdownDrain)
		}
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second < stopTakes(cfg) {
		t.Errorf("terminationGracePeriodSeconds (default 30) is shorter than the drain and the grace (%s)", stopTakes(cfg))
	}
	checkProbePaths(t, c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)

	jobPod := job.Spec.Template.Spec
	if len(jobPod.Containers) != 1 {
		t.Fatalf("the Job's pods run %d containers, want 1", len(jobPod.Containers))
	}
	m := jobPod.Containers[0]
	commandSettings(t, "the Job", append(m.Command, m.Args...), containerEnv(t, "the Job", m, objs.secrets))
	if len(m.Command) != 0 || len(m.Args) == 0 || m.Args[0] != "migrate" {
		t.Errorf("the Job runs %v %v, want the image's entrypoint with migrate", m.Command, m.Args)
	}
	if m.Image != c.Image {
		t.Errorf("the Job migrates with %s, the Deployment serves %s: a release's migrations come with its image", m.Image, c.Image)
	}

	if len(svc.Spec.Ports) != 1 || !samePort(svc.Spec.Ports[0].TargetPort, portName, port) {
		t.Errorf("the Service sends traffic to %+v, not to port %s", svc.Spec.Ports, port)
	}
	if !selects(svc.Spec.Selector, dep.Spec.Template.Labels) || selects(svc.Spec.Selector, job.Spec.Template.Labels) {
		t.Errorf("the Service selects %v: it must select the servers %v and not the migrate pod %v",
			svc.Spec.Selector, dep.Spec.Template.Labels, job.Spec.Template.Labels)
	}
}

func describeProbe(p *corev1.Probe) string {
	if p == nil || p.HTTPGet == nil {
		return "none (or not an HTTP GET)"
	}
	return fmt.Sprintf("GET %s on port %s", p.HTTPGet.Path, p.HTTPGet.Port.String())
}

// samePort says whether a probe's or a Service's port is the container's,
// by name or by number.
func samePort(p intstr.IntOrString, name, number string) bool {
	if p.Type == intstr.String {
		return p.StrVal == name
	}
	return strconv.Itoa(int(p.IntVal)) == number
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}
