// Package app assembles the services of the base_url API over a store: the
// one place that `sshdeck serve` and the Lambda functions share, so that
// both run the same rules with the same settings.
package app

import (
	"log/slog"
	"os"

	"github.com/sshdeck/sshdeck/shared/alerts"
	"github.com/sshdeck/sshdeck/shared/api"
	"github.com/sshdeck/sshdeck/shared/files"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/releases"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/upstream"
)

// Settings are the upstream services, from the environment (the same names
// in every binary).
type Settings struct {
	// ReleasesRepo is the owner/name of the feed's repository
	// (SSHDECK_RELEASES_REPO); without it the feed answers 404.
	ReleasesRepo string
	// ReleasesAPIURL is the GitHub API (SSHDECK_RELEASES_API_URL), by
	// default https://api.github.com.
	ReleasesAPIURL string
	// GitHubToken raises GitHub's rate limit (SSHDECK_GITHUB_TOKEN).
	GitHubToken string
	// AlertsURL is a remote JSON list of alerts (SSHDECK_ALERTS_URL).
	AlertsURL string
}

// SettingsFromEnv reads the Settings.
func SettingsFromEnv() Settings {
	return Settings{
		ReleasesRepo:   os.Getenv("SSHDECK_RELEASES_REPO"),
		ReleasesAPIURL: os.Getenv("SSHDECK_RELEASES_API_URL"),
		GitHubToken:    os.Getenv("SSHDECK_GITHUB_TOKEN"),
		AlertsURL:      os.Getenv("SSHDECK_ALERTS_URL"),
	}
}

// Config returns what the API needs over the store. A malformed setting
// fails with a sentence naming it.
func Config(store sshdeck.Store, sealer *secret.Sealer, set Settings, log *slog.Logger) (api.Config, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var remote alerts.Remote
	if set.AlertsURL != "" {
		list, err := upstream.NewAlertsList(set.AlertsURL, 0, nil)
		if err != nil {
			return api.Config{}, err
		}
		remote = upstream.NewRemoteAlerts(list, log, nil)
	}
	var feed *releases.Service
	if set.ReleasesRepo != "" {
		github, err := upstream.NewGitHub(upstream.GitHubConfig{
			BaseURL: set.ReleasesAPIURL,
			Repo:    set.ReleasesRepo,
			Token:   set.GitHubToken,
		})
		if err != nil {
			return api.Config{}, err
		}
		feed = releases.NewService(github, store, log, nil)
	}
	return api.Config{
		Hosts:    hosts.NewService(store, sealer, nil),
		Files:    files.NewService(store, nil),
		Alerts:   alerts.NewService(store, remote, nil),
		Releases: feed,
		Ping:     store.Ping,
		Logger:   log,
	}, nil
}
