package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
)

// streamBuffer is how much of a streamed answer is written at a time.
const streamBuffer = 32 << 10

// JSONArray writes a 200 answer whose body is a JSON array, an item at a
// time, in the bytes WriteJSON would write for the whole slice: a list
// holds a page of items in memory, never all of them. Once Start has
// written the status, an error can no longer be answered: a handler that
// fails midway calls Abort, which cuts the connection so that the client
// sees a truncated body rather than a short list that looks whole.
type JSONArray struct {
	w     *bufio.Writer
	enc   *json.Encoder
	item  bytes.Buffer
	count int
}

// arrays keeps JSONArrays for reuse: a 10-host list would otherwise
// allocate more for its buffer than for its hosts.
var arrays = sync.Pool{New: func() any {
	a := &JSONArray{w: bufio.NewWriterSize(nil, streamBuffer)}
	a.enc = json.NewEncoder(&a.item)
	a.enc.SetEscapeHTML(false)
	return a
}}

// StartJSONArray writes the status and the array's opening bracket.
func StartJSONArray(w http.ResponseWriter) *JSONArray {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	a := arrays.Get().(*JSONArray)
	a.w.Reset(w)
	a.count = 0
	a.w.WriteByte('[')
	return a
}

// Append writes v as the array's next item.
func (a *JSONArray) Append(v any) error {
	a.item.Reset()
	if err := a.enc.Encode(v); err != nil {
		return err
	}
	return a.AppendRaw(bytes.TrimSuffix(a.item.Bytes(), []byte{'\n'}))
}

// AppendRaw writes item, which must be one JSON value, as the next item.
func (a *JSONArray) AppendRaw(item []byte) error {
	if a.count > 0 {
		a.w.WriteByte(',')
	}
	a.count++
	_, err := a.w.Write(item)
	return err
}

// End closes the array and flushes the answer; a is not to be used after.
func (a *JSONArray) End() error {
	a.w.WriteString("]\n")
	err := a.w.Flush()
	a.w.Reset(nil)
	if a.item.Cap() <= streamBuffer {
		arrays.Put(a)
	}
	return err
}

// Abort ends an answer that cannot be completed: the server closes the
// connection without finishing it (net/http's ErrAbortHandler; in Lambda
// the invocation fails and API Gateway answers 502). Log why first.
func Abort() { panic(http.ErrAbortHandler) }
