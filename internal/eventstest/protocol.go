package eventstest

import (
	"encoding/json"
	"math"
	"net/http"
	"time"

	"github.com/sshdeck/sshdeck/internal/awsjson"
)

// EventBridge's limits on a PutEvents request: 1 to 10 entries, and less
// than 256 KB of them by its count (entrySize).
const (
	maxEntries      = 10
	maxRequestBytes = 256 * 1024
)

func (s *Server) handler() http.Handler {
	return awsjson.Service{
		Prefix:     "AWSEvents.",
		Operations: map[string]awsjson.Operation{"PutEvents": awsjson.Call(s.putEvents)},
		Count: func(op string) {
			s.mu.Lock()
			s.calls[op]++
			s.mu.Unlock()
		},
	}
}

type putEventsIn struct {
	Entries []struct {
		Source, DetailType, Detail, EventBusName *string
		Resources                                []string
		// Time is epoch seconds, with a fraction.
		Time *float64
	}
	EndpointId *string
}

type putEventsOut struct {
	FailedEntryCount int
	Entries          []resultEntry
}

type resultEntry struct {
	EventId      string `json:",omitempty"`
	ErrorCode    string `json:",omitempty"`
	ErrorMessage string `json:",omitempty"`
}

func (s *Server) putEvents(in *putEventsIn) (*putEventsOut, *awsjson.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) > 0 {
		typ := s.failures[0]
		s.failures = s.failures[1:]
		if typ != "" {
			return nil, awsjson.Errorf(typ, "the test made this request fail (eventstest.FailRequests)")
		}
	}
	switch {
	case len(in.Entries) == 0:
		return nil, awsjson.Errorf("ValidationException", "1 validation error detected: Value '[]' at 'entries' failed to satisfy constraint: Member must have length greater than or equal to 1")
	case len(in.Entries) > maxEntries:
		return nil, awsjson.Errorf("ValidationException", "1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length less than or equal to %d", maxEntries)
	}
	size := 0
	for _, e := range in.Entries {
		size += entrySize(e.Time != nil, e.Source, e.DetailType, e.Detail, e.Resources)
	}
	if size >= maxRequestBytes {
		return nil, awsjson.Errorf("ValidationException", "Total size of the entries in the request is over the limit.")
	}

	out := &putEventsOut{Entries: make([]resultEntry, len(in.Entries))}
	for i, e := range in.Entries {
		ev := Event{Bus: str(e.EventBusName), Source: str(e.Source), DetailType: str(e.DetailType), Detail: str(e.Detail),
			Resources: e.Resources, Time: time.Now().UTC()}
		if e.Time != nil {
			sec, frac := math.Modf(*e.Time)
			ev.Time = time.Unix(int64(sec), int64(math.Round(frac*1000))*int64(time.Millisecond)).UTC()
		}
		refusal := check(ev)
		if refusal == nil && s.refuse != nil {
			refusal = s.refuse(ev)
		}
		if refusal != nil {
			out.FailedEntryCount++
			out.Entries[i] = resultEntry{ErrorCode: refusal.Code, ErrorMessage: refusal.Message}
			continue
		}
		ev.ID = awsjson.UUID()
		s.events = append(s.events, ev)
		out.Entries[i] = resultEntry{EventId: ev.ID}
	}
	return out, nil
}

// check refuses an entry as EventBridge does: without its source, detail
// type or detail, or with a detail that is not a JSON object.
func check(ev Event) *Refusal {
	if ev.Source == "" || ev.DetailType == "" || ev.Detail == "" {
		return &Refusal{"InvalidArgument", "Parameters Source, DetailType and Detail are required."}
	}
	var detail map[string]any
	if json.Unmarshal([]byte(ev.Detail), &detail) != nil {
		return &Refusal{"MalformedDetail", "Detail is malformed."}
	}
	return nil
}

// entrySize is an entry's size as EventBridge counts it ("Calculating
// PutEvents event entry size"): 14 bytes for a Time, and the UTF-8 bytes
// of its Source, DetailType, Detail and each of its Resources.
func entrySize(hasTime bool, source, detailType, detail *string, resources []string) int {
	size := len(str(source)) + len(str(detailType)) + len(str(detail))
	if hasTime {
		size += 14
	}
	for _, r := range resources {
		size += len(r)
	}
	return size
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
