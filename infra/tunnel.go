package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapplicationautoscaling"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecspatterns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/iam"
)

// tunnelPort is where the container listens (SSHDECK_TUNNEL_ADDR).
const tunnelPort = 8081

// TunnelService is the tunnel service on ECS Fargate behind an Application
// Load Balancer, and the address clients reach it at.
type TunnelService struct {
	Service   awsecspatterns.ApplicationLoadBalancedFargateService
	LogBucket awss3.Bucket
	URL       string
}

func newTunnelService(scope constructs.Construct, cfg Config, data *Data) *TunnelService {
	vpc := newVPC(scope, cfg)
	cluster := awsecs.NewCluster(scope, jsii.String("Cluster"), &awsecs.ClusterProps{
		Vpc:                 vpc,
		ContainerInsightsV2: awsecs.ContainerInsights_ENABLED,
	})

	task := awsecs.NewFargateTaskDefinition(scope, jsii.String("TunnelTask"), &awsecs.FargateTaskDefinitionProps{
		Cpu:            jsii.Number(256),
		MemoryLimitMiB: jsii.Number(512),
		RuntimePlatform: &awsecs.RuntimePlatform{
			CpuArchitecture:       awsecs.CpuArchitecture_ARM64(),
			OperatingSystemFamily: awsecs.OperatingSystemFamily_LINUX(),
		},
	})
	// The task role: the store calls of the tunnel service, and the
	// credentials key (tunnels keep sealed credentials as hosts do).
	// It reads users and tokens (its token checks) but writes only
	// tunnels and known hosts (iam.TunnelServicePolicy).
	data.grantTable(task.TaskRole(), iam.TunnelServicePolicy())
	data.grantCredentials(task.TaskRole())

	logs := awslogs.NewLogGroup(scope, jsii.String("TunnelLogs"), &awslogs.LogGroupProps{
		Retention:     retention(cfg.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	deny := cfg.TunnelDenyCIDRs
	if deny == "" {
		// Added to the ranges the service always denies (link-local, the
		// metadata services' v4 and v6 addresses, unspecified, multicast,
		// broadcast): the hops it would dial itself here, its own loopback
		// and its own VPC (the load balancer, other tasks).
		deny = strings.Join(defaultTunnelDeny(*vpc.VpcCidrBlock()), ",")
	}
	task.AddContainer(jsii.String("tunnel"), &awsecs.ContainerDefinitionOptions{
		// Built from the repository root by tunnel-service/Dockerfile; synth
		// only records it, deploy builds and pushes it (Docker needed then).
		Image: awsecs.ContainerImage_FromAsset(jsii.String(cfg.Root), &awsecs.AssetImageProps{
			File:       jsii.String("tunnel-service/Dockerfile"),
			Platform:   awsecrassets.Platform_LINUX_ARM64(),
			IgnoreMode: awscdk.IgnoreMode_DOCKER,
		}),
		Environment: &map[string]*string{
			config.Table:           data.Table.TableName(),
			config.KMSKeyID:        data.CredentialsKey.KeyArn(),
			config.TunnelAddr:      jsii.String(":8081"),
			config.TunnelDenyCIDRs: jsii.String(deny),
			// Behind the load balancer: its X-Forwarded-For names the
			// caller, for the audit records' sourceIp.
			config.TrustForwardedFor: jsii.String("true"),
		},
		PortMappings: &[]*awsecs.PortMapping{{ContainerPort: jsii.Number(tunnelPort)}},
		Logging: awsecs.LogDriver_AwsLogs(&awsecs.AwsLogDriverProps{
			StreamPrefix: jsii.String("tunnel"),
			LogGroup:     logs,
		}),
		HealthCheck: &awsecs.HealthCheck{
			Command:     jsii.Strings("CMD", "/tunnel-service", "healthcheck"),
			Interval:    awscdk.Duration_Seconds(jsii.Number(15)),
			Timeout:     awscdk.Duration_Seconds(jsii.Number(5)),
			Retries:     jsii.Number(3),
			StartPeriod: awscdk.Duration_Seconds(jsii.Number(10)),
		},
		// On SIGTERM the service records every tunnel's end and releases
		// its leases, so that another task resumes the autoStart ones at
		// once. That takes a few seconds; 30 is Fargate's default, written
		// here so that nobody lowers it unaware.
		StopTimeout: awscdk.Duration_Seconds(jsii.Number(30)),
		// The image's own user (distroless nonroot), said again here so
		// that the task definition shows it; and a hard memory limit.
		User:                   jsii.String("65532:65532"),
		MemoryLimitMiB:         jsii.Number(512),
		ReadonlyRootFilesystem: jsii.Bool(true),
	})

	props := &awsecspatterns.ApplicationLoadBalancedFargateServiceProps{
		Cluster:            cluster,
		TaskDefinition:     task,
		DesiredCount:       jsii.Number(float64(cfg.TunnelTasks)),
		PublicLoadBalancer: jsii.Bool(true),
		TaskSubnets:        &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS},
		MinHealthyPercent:  jsii.Number(100),
		MaxHealthyPercent:  jsii.Number(200),
		CircuitBreaker:     &awsecs.DeploymentCircuitBreaker{Rollback: jsii.Bool(true)},
		// Status streams and forwards' WebSockets are long-lived requests
		// that send a byte well inside it (config.TunnelIdleTimeout); ALBs
		// carry WebSockets with the idle timeout as their only knob.
		IdleTimeout: awscdk.Duration_Seconds(jsii.Number(config.TunnelIdleTimeout.Seconds())),
	}
	scheme := "http"
	if cfg.CertificateARN != "" {
		scheme = "https"
		props.Certificate = awscertificatemanager.Certificate_FromCertificateArn(scope, jsii.String("TunnelCertificate"), jsii.String(cfg.CertificateARN))
		props.Protocol = awselasticloadbalancingv2.ApplicationProtocol_HTTPS
		props.RedirectHTTP = jsii.Bool(true)
		props.SslPolicy = awselasticloadbalancingv2.SslPolicy_RECOMMENDED_TLS
	}
	svc := awsecspatterns.NewApplicationLoadBalancedFargateService(scope, jsii.String("Tunnel"), props)
	if cfg.CertificateARN == "" {
		awscdk.Annotations_Of(svc.LoadBalancer()).AddWarningV2(jsii.String("sshdeck:tunnel-http"),
			jsii.String("the tunnel service is plain HTTP (allowHttp=true): bearer tokens and SSH passwords and keys would cross the internet unencrypted. "+
				"Give an ACM certificate: make deploy CONTEXT='-c certificateArn=arn:aws:acm:...' (and -c tunnelDomainName=... for its name)"))
	}

	svc.TargetGroup().ConfigureHealthCheck(&awselasticloadbalancingv2.HealthCheck{
		Path:                  jsii.String("/healthz"),
		HealthyHttpCodes:      jsii.String("200"),
		Interval:              awscdk.Duration_Seconds(jsii.Number(15)),
		HealthyThresholdCount: jsii.Number(2),
	})
	// Status streams never end by themselves: do not wait five minutes for
	// them when a task leaves.
	svc.TargetGroup().SetAttribute(jsii.String("deregistration_delay.timeout_seconds"), jsii.String("30"))
	svc.LoadBalancer().SetAttribute(jsii.String("routing.http.drop_invalid_header_fields.enabled"), jsii.String("true"))
	// Deleting the load balancer would change tunnel_url under every
	// client: make it a deliberate act (the README's teardown says how).
	svc.LoadBalancer().SetAttribute(jsii.String("deletion_protection.enabled"), jsii.String("true"))
	bucket := newLogBucket(scope)
	svc.LoadBalancer().LogAccessLogs(bucket, jsii.String("tunnel-alb"))

	scaling := svc.Service().AutoScaleTaskCount(&awsapplicationautoscaling.EnableScalingProps{
		MinCapacity: jsii.Number(float64(cfg.TunnelTasks)),
		MaxCapacity: jsii.Number(float64(cfg.TunnelMaxTasks)),
	})
	scaling.ScaleOnCpuUtilization(jsii.String("Cpu"), &awsecs.CpuUtilizationScalingProps{
		TargetUtilizationPercent: jsii.Number(60),
		// Scaling in stops a task: its autoStart tunnels move to another
		// (a reconnect), the others end. Do it rarely.
		ScaleInCooldown:  awscdk.Duration_Minutes(jsii.Number(15)),
		ScaleOutCooldown: awscdk.Duration_Minutes(jsii.Number(1)),
	})

	host := *svc.LoadBalancer().LoadBalancerDnsName()
	if cfg.TunnelDomainName != "" {
		host = cfg.TunnelDomainName
	}
	return &TunnelService{Service: svc, LogBucket: bucket, URL: scheme + "://" + host}
}

// defaultTunnelDeny is SSHDECK_TUNNEL_DENY_CIDRS when the context names
// none: loopback, and the VPC's own range (vpcCIDR).
func defaultTunnelDeny(vpcCIDR string) []string {
	return []string{"127.0.0.0/8", "::1/128", vpcCIDR}
}

// newVPC is a two-zone network: the load balancer in public subnets, the
// tasks in private ones that reach SSH hosts through one NAT gateway, and
// DynamoDB through a (free) gateway endpoint. Flow logs record rejected
// traffic.
func newVPC(scope constructs.Construct, cfg Config) awsec2.Vpc {
	vpc := awsec2.NewVpc(scope, jsii.String("Vpc"), &awsec2.VpcProps{
		MaxAzs:      jsii.Number(2),
		NatGateways: jsii.Number(1),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{
			// Only the load balancer and the NAT gateway live here, and
			// neither takes the subnet's automatic public IP.
			{Name: jsii.String("public"), SubnetType: awsec2.SubnetType_PUBLIC, CidrMask: jsii.Number(24), MapPublicIpOnLaunch: jsii.Bool(false)},
			{Name: jsii.String("tasks"), SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS, CidrMask: jsii.Number(24)},
		},
		GatewayEndpoints: &map[string]*awsec2.GatewayVpcEndpointOptions{
			"DynamoDB": {Service: awsec2.GatewayVpcEndpointAwsService_DYNAMODB()},
		},
		// Restricting the default security group takes a custom resource
		// (a Node.js Lambda function); nothing here uses that group.
		RestrictDefaultSecurityGroup: jsii.Bool(false),
	})
	flowLogs := awslogs.NewLogGroup(scope, jsii.String("VpcFlowLogs"), &awslogs.LogGroupProps{
		Retention:     retention(cfg.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	vpc.AddFlowLog(jsii.String("FlowLog"), &awsec2.FlowLogOptions{
		Destination: awsec2.FlowLogDestination_ToCloudWatchLogs(flowLogs, nil),
		TrafficType: awsec2.FlowLogTrafficType_REJECT,
	})
	return vpc
}

// newLogBucket keeps the load balancer's access logs: private, TLS only,
// encrypted with S3's keys (the only ones load balancers can write with),
// object lock on (nothing is locked by default; an auditor can set a
// retention), expired after a year.
func newLogBucket(scope constructs.Construct) awss3.Bucket {
	return awss3.NewBucket(scope, jsii.String("AccessLogs"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		Versioned:         jsii.Bool(true),
		ObjectLockEnabled: jsii.Bool(true),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Expiration:                  awscdk.Duration_Days(jsii.Number(365)),
			NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(30)),
		}},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
}
