// Package routes is the route table of the base_url API as plain data: the
// single source the local router, the Lambda functions, the CDK app and the
// tests all read. It imports the standard library only, so that the CDK
// module can read it without compiling a handler.
package routes

// Access is what a route may touch in the store.
type Access int

const (
	// Public routes need no token and read nothing of a user's.
	Public Access = iota
	// Read routes read the caller's records.
	Read
	// Write routes create, change or delete the caller's records.
	Write
)

func (a Access) String() string {
	switch a {
	case Public:
		return "public"
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "unknown"
}

// Route is one operation of the base_url API.
type Route struct {
	// Name names the route's handler, its Lambda function (functions/<Name>)
	// and its sample event (events/<Name>.json).
	Name   string
	Method string
	// Path uses {param} segments, as net/http patterns and API Gateway do.
	Path   string
	Access Access
	// Credentials: the route seals or opens credential fields, so it needs
	// the data key (kms:Decrypt, kms:GenerateDataKey in AWS).
	Credentials bool
	// Admin: only an admin may call the route; anyone else gets 403.
	Admin bool
	// Stream: in AWS the route's answer is streamed (API Gateway's
	// responseTransferMode STREAM, InvokeWithResponseStream): it may pass
	// Lambda's 6 MB limit on a buffered response (up to Lambda's 200 MB),
	// and its function holds a page of it, not all of it.
	Stream bool
}

// All is every base_url route.
var All = []Route{
	{Name: "healthz", Method: "GET", Path: "/healthz", Access: Public},
	// The unpaged list of 1000 hosts with 64 KiB keys is about 67 MB.
	{Name: "list-hosts", Method: "GET", Path: "/ssh/db/host", Access: Read, Credentials: true, Stream: true},
	{Name: "create-host", Method: "POST", Path: "/ssh/db/host", Access: Write, Credentials: true},
	{Name: "get-host", Method: "GET", Path: "/ssh/db/host/{id}", Access: Read, Credentials: true},
	{Name: "update-host", Method: "PUT", Path: "/ssh/db/host/{id}", Access: Write, Credentials: true},
	{Name: "delete-host", Method: "DELETE", Path: "/ssh/db/host/{id}", Access: Write},

	{Name: "list-recent-files", Method: "GET", Path: "/ssh/file_manager/recent", Access: Read},
	{Name: "add-recent-file", Method: "POST", Path: "/ssh/file_manager/recent", Access: Write},
	{Name: "delete-recent-file", Method: "DELETE", Path: "/ssh/file_manager/recent", Access: Write},
	{Name: "list-shortcuts", Method: "GET", Path: "/ssh/file_manager/shortcuts", Access: Read},
	{Name: "add-shortcut", Method: "POST", Path: "/ssh/file_manager/shortcuts", Access: Write},
	{Name: "delete-shortcut", Method: "DELETE", Path: "/ssh/file_manager/shortcuts", Access: Write},

	{Name: "list-alerts", Method: "GET", Path: "/alerts", Access: Read},
	{Name: "dismiss-alert", Method: "POST", Path: "/alerts/dismiss", Access: Write},
	{Name: "publish-alert", Method: "POST", Path: "/alerts", Access: Write, Admin: true},
	{Name: "delete-alert", Method: "DELETE", Path: "/alerts/{id}", Access: Write, Admin: true},

	// The feed reads nothing of a user's but writes the cache every
	// function instance shares: Write.
	{Name: "releases-feed", Method: "GET", Path: "/releases/rss", Access: Write},
}

// ByName returns the route with the name.
func ByName(name string) (Route, bool) {
	for _, r := range All {
		if r.Name == name {
			return r, true
		}
	}
	return Route{}, false
}
