// Package upstream holds the clients of the services sshdeck reads from: the
// GitHub releases API (GitHub) and a remote list of alerts (AlertsList, kept
// by RemoteAlerts). Every request is bounded in time and in size, every error
// names the upstream that failed, and no error or log line carries a
// credential: a GitHub token goes into a header and nowhere else.
package upstream
