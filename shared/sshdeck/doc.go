// Package sshdeck is the domain of sshdeck: its records, the store interfaces
// that persist them, the caller's identity and the coded error every layer
// returns. It imports the standard library only, so that every binary (Lambda
// functions, the tunnel service, the CDK app) can depend on it cheaply.
package sshdeck
