package api

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/sshdeck/sshdeck/shared/hostconfig"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshconfig"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// importAnswer is the body of an import's answer: 201 when every item was
// created, 400 (with error and code) when none was, with every item's
// result either way; skipped lists what of an ssh_config was not taken
// ([] for JSON).
type importAnswer struct {
	Error   string               `json:"error,omitempty"`
	Code    sshdeck.Code         `json:"code,omitempty"`
	Results []hosts.ImportResult `json:"results"`
	Skipped []hostconfig.Skipped `json:"skipped"`
}

// importHosts creates hosts from a JSON array of host records or an
// OpenSSH client config (text/plain), all or none.
func (s *Server) importHosts(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	ctx := r.Context()
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		mediaType = ""
	}
	var items []hosts.ImportItem
	skipped := []hostconfig.Skipped{}
	switch mediaType {
	case "application/json":
		var list []hosts.JSONItem
		if err := web.DecodeJSON(http.MaxBytesReader(w, r.Body, web.MaxJSONBody), "body", &list); err != nil {
			return err
		}
		if list == nil {
			return sshdeck.Errorf(sshdeck.Invalid, "body must be a JSON array of hosts, not null")
		}
		items = hosts.ResolveRefs(list)
	case "text/plain":
		cfg, err := readConfig(w, r)
		if err != nil {
			return err
		}
		names, err := s.hostNames(r, caller.UserID)
		if err != nil {
			return err
		}
		items, skipped, err = hostconfig.Import(cfg, hostconfig.Options{Existing: names, Local: r.URL.Query().Get("local")})
		if err != nil {
			return err
		}
	default:
		return sshdeck.Errorf(sshdeck.UnsupportedMediaType, "Content-Type must be application/json (an array of hosts) or text/plain (an OpenSSH client config)")
	}
	results, err := s.cfg.Hosts.Import(ctx, caller.UserID, items)
	switch {
	case err == hosts.ErrImportRefused:
		e := err.(*sshdeck.Error)
		web.WriteJSON(w, http.StatusBadRequest, importAnswer{Error: e.Message, Code: e.Code, Results: results, Skipped: skipped})
		return nil
	case err != nil:
		return err
	}
	web.WriteJSON(w, http.StatusCreated, importAnswer{Results: results, Skipped: skipped})
	return nil
}

// readConfig reads and parses a text/plain body: at most
// sshconfig.MaxInput bytes (413 past it), UTF-8.
func readConfig(w http.ResponseWriter, r *http.Request) (*sshconfig.Config, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, sshconfig.MaxInput))
	if err != nil {
		return nil, web.BodyError(err, "body could not be read")
	}
	if !utf8.Valid(data) {
		return nil, sshdeck.Errorf(sshdeck.Invalid, "body is not valid UTF-8")
	}
	return sshconfig.Parse(bytes.NewReader(data))
}

// hostNames maps the names of the owner's hosts to their ids, a page of
// the store at a time, for ProxyJump hops that name a stored host.
func (s *Server) hostNames(r *http.Request, owner string) (map[string][]int64, error) {
	names := map[string][]int64{}
	var after int64
	for {
		page, err := s.cfg.Hosts.Configs(r.Context(), owner, after, listPage)
		if err != nil {
			return nil, err
		}
		for _, h := range page {
			if h.Name != "" {
				names[h.Name] = append(names[h.Name], h.ID)
			}
		}
		if len(page) < listPage {
			return names, nil
		}
		after = page[len(page)-1].ID
	}
}

// exportHosts answers the caller's hosts as a JSON array of host records
// (format=json, the default: lossless, streamed a page of the store at a
// time as the list is) or as an OpenSSH client config (format=ssh_config).
// Credentials are in the JSON only with credentials=true; an ssh_config
// has none.
func (s *Server) exportHosts(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	q := r.URL.Query()
	withCreds, err := boolParam(q.Get("credentials"), "credentials")
	if err != nil {
		return err
	}
	switch format := q.Get("format"); format {
	case "", "json":
		return s.exportJSON(w, r, caller.UserID, withCreds)
	case "ssh_config":
		if withCreds {
			return sshdeck.Errorf(sshdeck.Invalid, "credentials: an ssh_config holds no credentials (format=json does)")
		}
		var local int64
		if raw := q.Get("local"); raw != "" {
			if local, err = strconv.ParseInt(raw, 10, 64); err != nil || local < 1 {
				return sshdeck.Errorf(sshdeck.Invalid, "local must be a host id (the host that stands for the machine the config is used on)")
			}
		}
		return s.exportConfig(w, r, caller.UserID, local)
	default:
		return sshdeck.Errorf(sshdeck.Invalid, "format must be json or ssh_config")
	}
}

func boolParam(raw, name string) (bool, error) {
	switch raw {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, sshdeck.Errorf(sshdeck.Invalid, "%s must be true or false", name)
}

// exportJSON streams the hosts as list-hosts does; without credentials
// their fields are "".
func (s *Server) exportJSON(w http.ResponseWriter, r *http.Request, owner string, withCreds bool) error {
	ctx := r.Context()
	page, err := s.cfg.Hosts.Page(ctx, owner, 0, listPage)
	if err != nil {
		return err
	}
	list := web.StartJSONArray(w)
	var item []byte
	for {
		for _, rec := range page {
			if !withCreds {
				rec.Credentials = sshdeck.Credentials{}
			}
			item = appendHost(item[:0], rec)
			if err := list.AppendRaw(item); err != nil {
				return s.abort(r, err)
			}
		}
		if len(page) < listPage {
			break
		}
		if page, err = s.cfg.Hosts.Page(ctx, owner, page[len(page)-1].ID, listPage); err != nil {
			return s.abort(r, err)
		}
	}
	if err := list.End(); err != nil {
		return s.abort(r, err)
	}
	return nil
}

// exportConfig writes the hosts as Host blocks. The whole config is made
// before the answer starts: hosts without credentials are a few hundred
// bytes each, and a jump host may come after the host that names it.
func (s *Server) exportConfig(w http.ResponseWriter, r *http.Request, owner string, local int64) error {
	var all []hostconfig.Host
	var after int64
	for {
		page, err := s.cfg.Hosts.Configs(r.Context(), owner, after, listPage)
		if err != nil {
			return err
		}
		for _, h := range page {
			all = append(all, hostconfig.Host{ID: h.ID, HostConfig: h.HostConfig})
		}
		if len(page) < listPage {
			break
		}
		after = page[len(page)-1].ID
	}
	var b bytes.Buffer
	if err := sshconfig.Write(&b, hostconfig.Export(all, local)); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b.Bytes())
	return err
}
