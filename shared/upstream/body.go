package upstream

import (
	"fmt"
	"io"
	"net/http"
)

// tooLargeError is returned when an answer's body is over the size a client
// reads: an upstream that sends more is broken or hostile, and reading on
// would only spend memory.
type tooLargeError struct{ max int64 }

func (e *tooLargeError) Error() string { return "answer over " + sizeText(e.max) }

// sizeText writes a byte count the way the limits are stated: "10 MiB".
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readAtMost reads the whole body of resp when it is at most max bytes. A
// declared Content-Length over max fails before anything is read.
func readAtMost(resp *http.Response, max int64) ([]byte, error) {
	if resp.ContentLength > max {
		return nil, &tooLargeError{max}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if int64(len(body)) > max {
		return nil, &tooLargeError{max}
	}
	return body, nil
}

// closeBody drains a little of what is left of the body, so that a short
// answer leaves its connection reusable, and closes it.
func closeBody(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}
