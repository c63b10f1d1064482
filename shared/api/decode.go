package api

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"unicode/utf8"

	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// maxMultipartBody bounds a whole multipart body: the data part, the key
// file and room for part headers and boundaries.
const maxMultipartBody = web.MaxJSONBody + sshdeck.MaxKeySize + 64<<10

// decodeHostInput reads a host from a JSON body, or from a multipart body
// whose "data" part is the JSON and whose optional "key" file part is the
// private key (winning over data.key).
func decodeHostInput(w http.ResponseWriter, r *http.Request) (*hosts.Input, error) {
	mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		mediaType = ""
	}
	var in hosts.Input
	switch mediaType {
	case "application/json":
		return &in, web.DecodeJSON(http.MaxBytesReader(w, r.Body, web.MaxJSONBody), "body", &in)
	case "multipart/form-data":
		if params["boundary"] == "" {
			return nil, sshdeck.Errorf(sshdeck.Invalid, "multipart body has no boundary")
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxMultipartBody)
		return &in, decodeMultipartHost(r, &in)
	}
	return nil, sshdeck.Errorf(sshdeck.UnsupportedMediaType, "Content-Type must be application/json or multipart/form-data")
}

func decodeMultipartHost(r *http.Request, in *hosts.Input) error {
	mr, err := r.MultipartReader()
	if err != nil {
		return sshdeck.Errorf(sshdeck.Invalid, "malformed multipart body")
	}
	var key *string
	seen := map[string]bool{}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return web.BodyError(err, "malformed multipart body")
		}
		name := part.FormName()
		if (name == "data" || name == "key") && seen[name] {
			return sshdeck.Errorf(sshdeck.Invalid, "multipart body has more than one %s part", name)
		}
		seen[name] = true
		switch name {
		case "data":
			data, err := readPart(part, "data", web.MaxJSONBody)
			if err != nil {
				return err
			}
			if err := web.DecodeJSON(bytes.NewReader(data), "data", in); err != nil {
				return err
			}
		case "key":
			data, err := readPart(part, "key", sshdeck.MaxKeySize)
			if err != nil {
				return err
			}
			// A key is text (PEM, OpenSSH); the PEM parser would skip
			// bytes around the block that the record would then hold.
			if !utf8.Valid(data) {
				return sshdeck.Errorf(sshdeck.Invalid, "key part is not valid UTF-8 text: send the key file as it is")
			}
			// A browser sends an empty part for a file input left empty:
			// that is no key, not a cleared one.
			if len(data) > 0 {
				k := string(data)
				key = &k
			}
		}
		part.Close()
	}
	if !seen["data"] {
		return sshdeck.Errorf(sshdeck.Invalid, "multipart body has no data part (the host as a JSON string)")
	}
	if key != nil {
		in.Key = key
	}
	return nil
}

func readPart(part io.Reader, name string, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(part, max+1))
	if err != nil {
		return nil, web.BodyError(err, "malformed multipart body")
	}
	if int64(len(data)) > max {
		return nil, sshdeck.Errorf(sshdeck.TooLarge, "%s part is over %d KiB", name, max>>10)
	}
	return data, nil
}
