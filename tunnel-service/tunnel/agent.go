package tunnel

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// A direct tunnel with key login offers its endpoint key to its client on
// the source through agent forwarding: the service is the agent, and the
// key never leaves it.
//
// sshd grants agent forwarding once per connection (the first session's
// auth-agent-req@openssh.com; later sessions' are refused, yet see the same
// SSH_AUTH_SOCK), and its auth-agent@openssh.com channels say nothing of
// the session they serve. So on a source connection shared by several
// direct tunnels, the agent is the connection's (agentSlot), and holds one
// tunnel's key at a time: a tunnel takes the slot for its client's login,
// from the exec until the forward is up or the client ends, and gives it
// back, revoking its agent, whose key nothing can then use.

// agentChannelType is the channel sshd opens for each use of the
// forwarded agent.
const agentChannelType = "auth-agent@openssh.com"

// agentSlot is a source connection's forwarded agent.
type agentSlot struct {
	turn    chan struct{} // holds a token while a tunnel's login has the slot
	granted atomic.Bool   // sshd granted agent forwarding on the connection

	mu      sync.Mutex
	current *keyAgent
}

func (s *agentSlot) init() {
	s.turn = make(chan struct{}, 1)
}

// take waits for the slot and puts signer in it; the caller gives it back
// (give) once its client logged in or ended.
func (s *agentSlot) take(ctx context.Context, signer ssh.Signer) (*keyAgent, error) {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	a := &keyAgent{signer: signer}
	s.mu.Lock()
	s.current = a
	s.mu.Unlock()
	return a, nil
}

// give revokes a and frees the slot.
func (s *agentSlot) give(a *keyAgent) {
	a.revoked.Store(true)
	s.mu.Lock()
	if s.current == a {
		s.current = nil
	}
	s.mu.Unlock()
	<-s.turn
}

// serve answers one auth-agent@openssh.com channel with the agent in the
// slot; with none, the channel is refused.
func (s *agentSlot) serve(nc ssh.NewChannel) {
	s.mu.Lock()
	a := s.current
	s.mu.Unlock()
	if a == nil {
		nc.Reject(ssh.Prohibited, "no key is offered now")
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	agent.ServeAgent(a, ch)
	ch.Close()
}

var (
	errAgentRevoked = errors.New("agent: the login this key was offered for is over")
	errAgentOp      = errors.New("agent: not supported")
)

// keyAgent is an agent holding one key, until revoked. It lists, and signs
// with, that key; it adds, removes, locks and exports nothing.
type keyAgent struct {
	signer  ssh.Signer
	revoked atomic.Bool
}

var _ agent.ExtendedAgent = (*keyAgent)(nil)

func (a *keyAgent) List() ([]*agent.Key, error) {
	if a.revoked.Load() {
		return nil, nil
	}
	pub := a.signer.PublicKey()
	return []*agent.Key{{Format: pub.Type(), Blob: pub.Marshal(), Comment: "sshdeck"}}, nil
}

func (a *keyAgent) Sign(key ssh.PublicKey, data []byte) (*ssh.Signature, error) {
	return a.SignWithFlags(key, data, 0)
}

func (a *keyAgent) SignWithFlags(key ssh.PublicKey, data []byte, flags agent.SignatureFlags) (*ssh.Signature, error) {
	if a.revoked.Load() {
		return nil, errAgentRevoked
	}
	if string(key.Marshal()) != string(a.signer.PublicKey().Marshal()) {
		return nil, errors.New("agent: no such key")
	}
	algo := ""
	switch {
	case flags&agent.SignatureFlagRsaSha512 != 0:
		algo = ssh.KeyAlgoRSASHA512
	case flags&agent.SignatureFlagRsaSha256 != 0:
		algo = ssh.KeyAlgoRSASHA256
	}
	if as, ok := a.signer.(ssh.AlgorithmSigner); ok && algo != "" {
		return as.SignWithAlgorithm(nil, data, algo)
	}
	return a.signer.Sign(nil, data)
}

func (a *keyAgent) Add(agent.AddedKey) error       { return errAgentOp }
func (a *keyAgent) Remove(ssh.PublicKey) error     { return errAgentOp }
func (a *keyAgent) RemoveAll() error               { return errAgentOp }
func (a *keyAgent) Lock([]byte) error              { return errAgentOp }
func (a *keyAgent) Unlock([]byte) error            { return errAgentOp }
func (a *keyAgent) Signers() ([]ssh.Signer, error) { return nil, errAgentOp }
func (a *keyAgent) Extension(string, []byte) ([]byte, error) {
	return nil, agent.ErrExtensionUnsupported
}
