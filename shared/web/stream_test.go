package web_test

import (
	"net/http/httptest"
	"testing"

	"github.com/sshdeck/sshdeck/shared/web"
)

// TestJSONArray: an array written an item at a time is byte for byte what
// WriteJSON writes for the whole slice, empty or not, reused or not.
func TestJSONArray(t *testing.T) {
	type item struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}
	for _, items := range [][]item{
		{},
		{{Name: "a <b> & \"c\"", Tags: []string{"x"}}},
		{{Name: "é\u2028\x01"}, {Name: "2", Tags: []string{}}, {Name: "3"}},
	} {
		for range 2 {
			want := httptest.NewRecorder()
			web.WriteJSON(want, 200, items)
			got := httptest.NewRecorder()
			a := web.StartJSONArray(got)
			for _, it := range items {
				if err := a.Append(it); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.End(); err != nil {
				t.Fatal(err)
			}
			if got.Body.String() != want.Body.String() || got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
				t.Fatalf("JSONArray wrote %d %q %q, WriteJSON %d %q %q", got.Code, got.Header().Get("Content-Type"), got.Body, want.Code, want.Header().Get("Content-Type"), want.Body)
			}
		}
	}
}
