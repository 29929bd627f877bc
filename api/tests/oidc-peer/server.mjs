// A real OpenID provider for Gatehouse's social sign-in tests: panva's oidc-provider with one
// confidential client, PKCE required, claims in the id token, consent skipped, refresh tokens.
// Listens on a free loopback port and prints `OIDC_ISSUER=<url>` once it is ready.
// Environment: CLIENT_ID, CLIENT_SECRET, REDIRECT_URIS (comma-separated); APPLE_REDIRECT_URI
// adds an Apple-like client (`${CLIENT_ID}-apple`: `code id_token` answered by form_post; a
// native client, so that an http loopback redirect URI is allowed). CERT_JWKS (a JSON key set)
// adds a client that authenticates with a client assertion (`${CLIENT_ID}-cert`,
// private_key_jwt, Microsoft's certificate credentials) for the microsoft callback.
import http from 'node:http';
import Provider from 'oidc-provider';

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const clients = [{
  client_id: process.env.CLIENT_ID,
  client_secret: process.env.CLIENT_SECRET,
  redirect_uris: process.env.REDIRECT_URIS.split(','),
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'client_secret_post',
}];
if (process.env.APPLE_REDIRECT_URI) {
  clients.push({
    client_id: `${process.env.CLIENT_ID}-apple`,
    client_secret: process.env.CLIENT_SECRET,
    redirect_uris: [process.env.APPLE_REDIRECT_URI],
    grant_types: ['authorization_code', 'refresh_token', 'implicit'],
    response_types: ['code id_token'],
    application_type: 'native',
    token_endpoint_auth_method: 'client_secret_post',
  });
}

if (process.env.CERT_JWKS) {
  clients.push({
    client_id: `${process.env.CLIENT_ID}-cert`,
    redirect_uris: process.env.REDIRECT_URIS.split(','),
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'private_key_jwt',
    token_endpoint_auth_signing_alg: 'RS256',
    jwks: JSON.parse(process.env.CERT_JWKS),
  });
}

const provider = new Provider(issuer, {
  clients,
  pkce: { required: () => true },
  claims: {
    openid: ['sub', 'oid'],
    email: ['email', 'email_verified'],
    profile: ['name', 'picture'],
  },
  conformIdTokenClaims: false,
  cookies: { keys: ['gatehouse-oidc-peer-test-key'] },
  async findAccount(ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        return {
          sub,
          // Microsoft's account key.
          oid: `oid-${sub}`,
          email: `${sub}@example.com`,
          email_verified: true,
          name: `User ${sub}`,
          picture: `${issuer}/pictures/${sub}.png`,
        };
      },
    };
  },
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) {
      return ctx.oidc.provider.Grant.find(grantId);
    }
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid email profile offline_access');
    grant.addOIDCClaims(['email', 'email_verified', 'name', 'picture']);
    await grant.save();
    return grant;
  },
  async issueRefreshToken() {
    return true;
  },
});
provider.proxy = false;
server.on('request', provider.callback());
process.stdout.write(`OIDC_ISSUER=${issuer}\n`);
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => server.close(() => process.exit(0)));
}
