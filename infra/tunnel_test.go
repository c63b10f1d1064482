package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
)

// TestTunnelService: the tunnel service runs on Fargate (ARM64) behind the
// load balancer's target group, as many tasks as tunnelTasks says, and
// scales out on CPU up to tunnelMaxTasks.
func TestTunnelService(t *testing.T) {
	for _, tc := range []struct {
		name     string
		s        *synthesis
		min, max float64
	}{{"default", synthDefault(t), 1, 4}, {"https (tunnelTasks=2, tunnelMaxTasks=3)", synthHTTPS(t), 2, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			id, service := s.only(t, "AWS::ECS::Service")
			p := service.Properties
			if !onFargate(p) {
				t.Errorf("service %s: LaunchType %v, CapacityProviderStrategy %v; want Fargate", id, p["LaunchType"], render(p["CapacityProviderStrategy"]))
			}
			if p["DesiredCount"] != tc.min {
				t.Errorf("service %s runs %v tasks, want %v", id, p["DesiredCount"], tc.min)
			}
			taskID, task := s.only(t, "AWS::ECS::TaskDefinition")
			if refID(p["TaskDefinition"]) != taskID {
				t.Errorf("service %s runs %v, want the task definition %s", id, render(p["TaskDefinition"]), taskID)
			}
			if !slices.Contains(strs(task.Properties["RequiresCompatibilities"]), "FARGATE") {
				t.Errorf("task definition %s is not for Fargate: %v", taskID, task.Properties["RequiresCompatibilities"])
			}
			if platform := task.Properties["RuntimePlatform"]; property(platform, "CpuArchitecture") != "ARM64" || property(platform, "OperatingSystemFamily") != "LINUX" {
				t.Errorf("task definition %s runs on %v, want ARM64 LINUX", taskID, render(platform))
			}

			targetGroup, group := s.only(t, "AWS::ElasticLoadBalancingV2::TargetGroup")
			balanced := list(p["LoadBalancers"])
			if len(balanced) != 1 || property(balanced[0], "ContainerPort") != float64(tunnelPort) || refID(property(balanced[0], "TargetGroupArn")) != targetGroup {
				t.Errorf("service %s is balanced as %v, want container port %d in target group %s", id, render(p["LoadBalancers"]), tunnelPort, targetGroup)
			}
			// The service's own /healthz, which checks the table too.
			if path := group.Properties["HealthCheckPath"]; path != "/healthz" {
				t.Errorf("target group %s checks health at %v, want /healthz", targetGroup, path)
			}

			scalingID, scaling := s.only(t, "AWS::ApplicationAutoScaling::ScalableTarget")
			if sp := scaling.Properties; sp["MinCapacity"] != tc.min || sp["MaxCapacity"] != tc.max || !refersTo(sp["ResourceId"], id) {
				t.Errorf("scalable target %s: %v to %v tasks of %v, want %v to %v of service %s", scalingID, sp["MinCapacity"], sp["MaxCapacity"], render(sp["ResourceId"]), tc.min, tc.max, id)
			}
		})
	}
}

func onFargate(service map[string]any) bool {
	if service["LaunchType"] == "FARGATE" {
		return true
	}
	strategy := list(service["CapacityProviderStrategy"])
	return len(strategy) > 0 && !slices.ContainsFunc(strategy, func(s any) bool {
		provider, _ := property(s, "CapacityProvider").(string)
		return !strings.HasPrefix(provider, "FARGATE")
	})
}

// TestTunnelContainer: the container's settings, its health check, a
// stop timeout long enough to record every tunnel's end, and no root.
func TestTunnelContainer(t *testing.T) {
	s := synthDefault(t)
	table, _ := s.only(t, "AWS::DynamoDB::Table")
	_, credentialsKey := s.keys(t)
	taskID, task := s.only(t, "AWS::ECS::TaskDefinition")
	containers := list(task.Properties["ContainerDefinitions"])
	if len(containers) != 1 {
		t.Fatalf("task definition %s has %d containers, want 1", taskID, len(containers))
	}
	c, _ := containers[0].(map[string]any)
	name := fmt.Sprintf("container %v", c["Name"])

	if !slices.ContainsFunc(list(c["PortMappings"]), func(m any) bool { return property(m, "ContainerPort") == float64(tunnelPort) }) {
		t.Errorf("%s maps ports %v, want %d", name, render(c["PortMappings"]), tunnelPort)
	}
	env := map[string]any{}
	for _, e := range list(c["Environment"]) {
		env[render(property(e, "Name"))] = property(e, "Value")
	}
	for variable, ok := range map[string]func(any) bool{
		"SSHDECK_TABLE":       func(v any) bool { return refID(v) == table },
		"SSHDECK_KMS_KEY_ID":  func(v any) bool { return isARN(v, credentialsKey) },
		"SSHDECK_TUNNEL_ADDR": func(v any) bool { return v == fmt.Sprintf(":%d", tunnelPort) },
		// Added to what the service always denies (link-local, metadata,
		// unspecified, multicast, broadcast): the hops it dials itself
		// here, loopback and the VPC's own range (the load balancer, other
		// tasks). Nothing else: no tunnel to another private network is
		// refused that the operator did not list.
		"SSHDECK_TUNNEL_DENY_CIDRS": func(v any) bool {
			return render(v) == "127.0.0.0/8,::1/128,${"+s.vpcID(t)+".CidrBlock}"
		},
	} {
		if v, set := env[variable]; !set || !ok(v) {
			t.Errorf("%s: %s is %v", name, variable, render(v))
		}
	}

	if command := strs(property(c, "HealthCheck", "Command")); !slices.Equal(command, []string{"CMD", "/tunnel-service", "healthcheck"}) {
		t.Errorf("%s health check runs %v, want [CMD /tunnel-service healthcheck]", name, command)
	}
	// On SIGTERM the service records every tunnel's end and releases its
	// leases; ECS would kill it after its default.
	if stop, _ := c["StopTimeout"].(float64); stop < 20 {
		t.Errorf("%s: StopTimeout %v, want at least 20 s", name, c["StopTimeout"])
	}
	if c["ReadonlyRootFilesystem"] != true {
		t.Errorf("%s: ReadonlyRootFilesystem %v, want true", name, c["ReadonlyRootFilesystem"])
	}
	user, _ := c["User"].(string)
	if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Errorf("%s runs as user %q, want one that is not root", name, user)
	}
}

// vpcID is the logical id of the VPC.
func (s *synthesis) vpcID(t *testing.T) string {
	t.Helper()
	id, _ := s.only(t, "AWS::EC2::VPC")
	return id
}

// listener is an AWS::ElasticLoadBalancingV2::Listener, for messages.
type listener struct {
	id    string
	props map[string]any
}

func (l listener) String() string {
	return fmt.Sprintf("%s %v:%v %s", l.id, l.props["Protocol"], l.props["Port"], render(l.props["DefaultActions"]))
}

func (s *synthesis) listeners() []listener {
	var out []listener
	for _, id := range s.ids("AWS::ElasticLoadBalancingV2::Listener") {
		out = append(out, listener{id, s.Resources[id].Properties})
	}
	return out
}

// forwards tells whether l's default action forwards to the target group.
func (l listener) forwards(targetGroup string) bool {
	actions := list(l.props["DefaultActions"])
	return len(actions) == 1 && property(actions[0], "Type") == "forward" && refID(property(actions[0], "TargetGroupArn")) == targetGroup
}

// TestTunnelListenerHTTP: without a certificate the tunnel service is plain
// HTTP on port 80 (and synth warns: TestTunnelHTTPWarning).
func TestTunnelListenerHTTP(t *testing.T) {
	s := synthDefault(t)
	targetGroup, _ := s.only(t, "AWS::ElasticLoadBalancingV2::TargetGroup")
	listeners := s.listeners()
	if len(listeners) != 1 || listeners[0].props["Protocol"] != "HTTP" || listeners[0].props["Port"] != 80.0 || !listeners[0].forwards(targetGroup) {
		t.Errorf("listeners %v, want one, HTTP:80 forwarding to %s", listeners, targetGroup)
	}
}

// TestTunnelListenerHTTPS: with a certificate the tunnel service is HTTPS
// on port 443 with it, and port 80 only redirects there.
func TestTunnelListenerHTTPS(t *testing.T) {
	s := synthHTTPS(t)
	targetGroup, _ := s.only(t, "AWS::ElasticLoadBalancingV2::TargetGroup")
	listeners := s.listeners()
	var https, redirect int
	for _, l := range listeners {
		switch l.props["Port"] {
		case 443.0:
			https++
			certificates := list(l.props["Certificates"])
			if l.props["Protocol"] != "HTTPS" || len(certificates) != 1 || property(certificates[0], "CertificateArn") != testCertificateARN || !l.forwards(targetGroup) {
				t.Errorf("listener %v, want HTTPS with certificate %s forwarding to %s", l, testCertificateARN, targetGroup)
			}
		case 80.0:
			redirect++
			actions := list(l.props["DefaultActions"])
			if l.props["Protocol"] != "HTTP" || len(actions) != 1 || property(actions[0], "Type") != "redirect" ||
				property(actions[0], "RedirectConfig", "Protocol") != "HTTPS" || property(actions[0], "RedirectConfig", "Port") != "443" {
				t.Errorf("listener %v, want HTTP redirecting to HTTPS:443", l)
			}
		default:
			t.Errorf("listener %v: want only ports 443 and 80", l)
		}
	}
	if https != 1 || redirect != 1 {
		t.Errorf("listeners %v, want one HTTPS:443 and one HTTP:80 redirect", listeners)
	}
}

// TestTunnelHTTPWarning: synth warns that the tunnel service is plain
// HTTP, and only when it is.
func TestTunnelHTTPWarning(t *testing.T) {
	ack := assertions.Match_StringLikeRegexp(jsii.String(".*sshdeck:tunnel-http.*"))
	for _, tc := range []struct {
		name string
		s    *synthesis
		want int
	}{{"default", synthDefault(t), 1}, {"https", synthHTTPS(t), 0}} {
		var warnings []*cxapi.SynthesisMessage
		must(t, tc.name+" warnings", func() { warnings = *tc.s.annotations.FindWarning(jsii.String("*"), ack) })
		if len(warnings) != tc.want {
			t.Errorf("%s synth: %d sshdeck:tunnel-http warnings, want %d", tc.name, len(warnings), tc.want)
		}
	}
}
