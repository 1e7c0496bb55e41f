// kubelet-client registers a plugin socket the way kubelet 1.37.2's plugin watcher does
// (pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go: `dial` with the bare socket
// path as target, a unix dialer, WithBlock and a 10 s bound; GetInfo with 1 s; then
// NotifyRegistrationStatus), with the grpc-go version Kubernetes 1.37.2 requires, and prints how
// long each step took. Exit 3: dial failed, 4: GetInfo failed, 5: NotifyRegistrationStatus failed.
//
// Build (Go modules from the parts cache, no network):
//
//	GOMODCACHE=~/.cache/lvstamp-parts/go/mod GOFLAGS=-mod=mod GOPROXY=off go build -o /tmp/kubelet-client .
//	/tmp/kubelet-client /path/to/registration.sock
//
// GODEBUG=http2debug=2 shows the HTTP/2 frames (the :authority is the %-encoded socket path).
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

func main() {
	socket := os.Args[1]
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := grpc.DialContext(ctx, socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithBlock(),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}),
	)
	if err != nil {
		fmt.Printf("DIAL FAILED after %v: %v\n", time.Since(t0), err)
		os.Exit(3)
	}
	defer c.Close()
	fmt.Printf("dialed in %v\n", time.Since(t0))
	client := registerapi.NewRegistrationClient(c)
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	t1 := time.Now()
	info, err := client.GetInfo(ctx2, &registerapi.InfoRequest{})
	if err != nil {
		fmt.Printf("GETINFO FAILED after %v: %v\n", time.Since(t1), err)
		os.Exit(4)
	}
	fmt.Printf("GetInfo in %v: type=%q name=%q endpoint=%q versions=%v\n", time.Since(t1), info.Type, info.Name, info.Endpoint, info.SupportedVersions)
	ctx3, cancel3 := context.WithTimeout(context.Background(), time.Second)
	defer cancel3()
	t2 := time.Now()
	if _, err := client.NotifyRegistrationStatus(ctx3, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		fmt.Printf("NOTIFY FAILED after %v: %v\n", time.Since(t2), err)
		os.Exit(5)
	}
	fmt.Printf("NotifyRegistrationStatus in %v\n", time.Since(t2))
}
