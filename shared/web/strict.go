package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Authorization returns the request's Authorization header, for an
// authenticator. Two or more of them are Unauthorized: a proxy or a cache
// in front may read another one than the service does, so that which token
// a request carries would depend on who reads it (API.md, "Limits, paging
// and tenancy"). Every service that checks tokens reads the header here.
func Authorization(r *http.Request) (string, error) {
	values := r.Header.Values("Authorization")
	if len(values) > 1 {
		return "", sshdeck.Errorf(sshdeck.Unauthorized, "more than one Authorization header: send one, Authorization: Bearer <token>")
	}
	if len(values) == 0 {
		return "", nil
	}
	return values[0], nil
}

// CleanPath reports whether a request path is in the one form the routers
// match: no dot segment ("." or "..", escaped or not: %2e%2e) and no empty
// segment ("//"). net/http's ServeMux answers any other path with a
// redirect to its cleaned form (HTML, 307), or routes %2e%2e as a value,
// and a Lambda function would route it as it is; the services answer it
// 404 in the contract's body instead (WithRequest), so that no path means
// two things. Segments are those of the escaped path, as the mux sees
// them: an escaped slash is part of a segment ("team%2F.." names the
// tunnel "team/.."), not a separator.
func CleanPath(r *http.Request) bool {
	if r.Method == http.MethodConnect {
		return true // CONNECT's target is not a path; the mux routes it to 404 or 405 as is
	}
	// No path at all is not the root: "GET //healthz" reads as the host
	// "healthz" and an empty path, which the mux redirects to "/".
	p := r.URL.EscapedPath()
	if p == "/" {
		return true
	}
	if p == "" || p[0] != '/' {
		return false
	}
	// Every segment but the last (empty after a trailing slash, which
	// routes name) must be non-empty, and none a dot segment.
	segments := strings.Split(p[1:], "/")
	for i, s := range segments {
		if s == "" && i < len(segments)-1 {
			return false
		}
		if u, err := url.PathUnescape(s); err == nil && (u == "." || u == "..") || s == "." || s == ".." {
			return false
		}
	}
	return true
}

// notCleanPath is the answer to a path that is not clean.
func notCleanPath(r *http.Request) error {
	return sshdeck.Errorf(sshdeck.NotFound, "no route for %s %s: a path may hold no '.' or '..' segment and no '//'", r.Method, r.URL.EscapedPath())
}
