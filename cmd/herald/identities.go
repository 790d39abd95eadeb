package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/herald-vpn/herald/internal/config"
	"github.com/herald-vpn/herald/internal/identities"
	"github.com/herald-vpn/herald/internal/identities/provider"
	"github.com/herald-vpn/herald/internal/tracing"
	"github.com/riverqueue/river"
)

// newIdentities builds Sign in with Apple and Google from cfg: a provider
// without client ids is off; the Apple key, when given, exchanges
// authorization codes and revokes tokens (its worker registered here).
func (a *App) newIdentities(ctx context.Context, cfg config.Config) (*identities.Service, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: tracing.Transport(a.tracer, "identity-provider", nil)}
	// The key sets fetch under this context for the server's life.
	keysCtx := context.WithoutCancel(ctx)
	now := func() time.Time { return time.Now() }
	verifiers := map[identities.Provider]identities.TokenVerifier{}
	if len(cfg.AppleClientIDs) > 0 {
		verifiers[identities.Apple] = provider.NewVerifier(keysCtx, identities.Apple, provider.ProviderConfig{Issuer: cfg.AppleIssuer, JWKSURL: cfg.AppleJWKSURL, ClientIDs: cfg.AppleClientIDs}, client, now)
	}
	if len(cfg.GoogleClientIDs) > 0 {
		verifiers[identities.Google] = provider.NewVerifier(keysCtx, identities.Google, provider.ProviderConfig{Issuer: cfg.GoogleIssuer, JWKSURL: cfg.GoogleJWKSURL, ClientIDs: cfg.GoogleClientIDs}, client, now)
	}
	var apple *provider.Apple
	if cfg.AppleSignInKeyFile != "" {
		pem, err := os.ReadFile(cfg.AppleSignInKeyFile)
		if err != nil {
			return nil, configError{fmt.Sprintf("HERALD_APPLE_SIGNIN_KEY_FILE: %v", err)}
		}
		key, err := provider.ParseAppleKey(pem)
		if err != nil {
			return nil, configError{fmt.Sprintf("HERALD_APPLE_SIGNIN_KEY_FILE: %v", err)}
		}
		if cfg.AppleTeamID == "" || cfg.AppleSignInKeyID == "" || len(cfg.AppleClientIDs) == 0 {
			return nil, configError{"HERALD_APPLE_SIGNIN_KEY_FILE needs HERALD_APPLE_TEAM_ID, HERALD_APPLE_SIGNIN_KEY_ID and HERALD_APPLE_CLIENT_IDS (its first is the client id of the exchange)"}
		}
		apple = provider.NewApple(provider.AppleConfig{BaseURL: cfg.AppleTokenURL, TeamID: cfg.AppleTeamID, KeyID: cfg.AppleSignInKeyID, ClientID: cfg.AppleClientIDs[0], Key: key}, client, now)
	}
	log := a.logger.With("component", "identities")
	svcCfg := identities.Config{Verifiers: verifiers, Log: log}
	worker := &identities.RevokeWorker{Tokens: a.db, Log: log, IsTerminal: func(err error) bool { return errors.Is(err, provider.ErrRefused) }}
	if apple != nil {
		svcCfg.Apple, worker.Apple = apple, apple
	}
	river.AddWorker(a.workers, worker)
	return identities.NewService(a.db, a.Accounts, a.Sessions, svcCfg), nil
}
