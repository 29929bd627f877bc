// The browser's side of a passkey: the server's JSON options (base64url for every byte
// string) made into what navigator.credentials takes, and the credential it returns made into
// the JSON the server reads. Nothing here talks to the server.
import type { Schemas } from "./api";

type RegistrationOptions = Schemas["PasskeyRegistrationOptions"];
type AuthenticationOptions = Schemas["PasskeyAuthenticationOptions"];
type Descriptor = Schemas["PasskeyCredentialDescriptor"];

export function fromBase64url(s: string): ArrayBuffer {
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(s.length / 4) * 4, "=");
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out.buffer;
}

export function toBase64url(b: ArrayBuffer | ArrayBufferView): string {
  const bytes = b instanceof ArrayBuffer ? new Uint8Array(b) : new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  let bin = "";
  for (const x of bytes) bin += String.fromCharCode(x);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function descriptor(d: Descriptor): PublicKeyCredentialDescriptor {
  return { type: "public-key", id: fromBase64url(d.id), transports: (d.transports ?? undefined) as AuthenticatorTransport[] | undefined };
}

/** Whether this browser can use passkeys at all. */
export function passkeysSupported(): boolean {
  return typeof window !== "undefined" && typeof window.PublicKeyCredential === "function" && !!navigator.credentials;
}

/** Whether the browser offers passkeys in a field's autofill (conditional mediation). */
export async function autofillSupported(): Promise<boolean> {
  if (!passkeysSupported()) return false;
  const check = (PublicKeyCredential as unknown as { isConditionalMediationAvailable?: () => Promise<boolean> }).isConditionalMediationAvailable;
  return check ? check.call(PublicKeyCredential).catch(() => false) : false;
}

/** A cancelled or refused ceremony (the person closed the dialog, or none matched). */
export function cancelled(e: unknown): boolean {
  return e instanceof DOMException && (e.name === "NotAllowedError" || e.name === "AbortError");
}

/** Asks the authenticator for a new credential: the JSON `verify-registration` takes. */
export async function create(o: RegistrationOptions): Promise<Record<string, unknown>> {
  const publicKey: PublicKeyCredentialCreationOptions = {
    challenge: fromBase64url(o.challenge),
    rp: o.rp,
    user: { id: fromBase64url(o.user.id), name: o.user.name, displayName: o.user.displayName },
    pubKeyCredParams: o.pubKeyCredParams.map((p) => ({ type: "public-key", alg: p.alg })),
    timeout: o.timeout,
    attestation: o.attestation as AttestationConveyancePreference,
    excludeCredentials: o.excludeCredentials.map(descriptor),
    authenticatorSelection: {
      residentKey: o.authenticatorSelection.residentKey as ResidentKeyRequirement,
      userVerification: o.authenticatorSelection.userVerification as UserVerificationRequirement,
      requireResidentKey: o.authenticatorSelection.requireResidentKey,
      authenticatorAttachment: (o.authenticatorSelection.authenticatorAttachment ?? undefined) as AuthenticatorAttachment | undefined,
    },
    extensions: { credProps: o.extensions.credProps } as AuthenticationExtensionsClientInputs,
  };
  const cred = answered(await navigator.credentials.create({ publicKey }));
  const r = cred.response as AuthenticatorAttestationResponse;
  return asJson(cred, {
    clientDataJSON: toBase64url(r.clientDataJSON),
    attestationObject: toBase64url(r.attestationObject),
    transports: r.getTransports?.() ?? [],
  });
}

function answered(c: Credential | null): PublicKeyCredential {
  if (!c) throw new DOMException("no credential", "NotAllowedError");
  return c as PublicKeyCredential;
}

/** A credential as the server reads it, with its `response` already encoded. */
function asJson(cred: PublicKeyCredential, response: Record<string, unknown>): Record<string, unknown> {
  return {
    id: cred.id,
    rawId: toBase64url(cred.rawId),
    type: cred.type,
    response,
    clientExtensionResults: cred.getClientExtensionResults(),
    authenticatorAttachment: cred.authenticatorAttachment ?? undefined,
  };
}

/** Asks the authenticator to sign in: the JSON `verify-authentication` takes. With
 * `conditional`, the browser offers its passkeys in the autofill of a field marked
 * `autocomplete="username webauthn"` and waits (until `signal` aborts). */
export async function get(o: AuthenticationOptions, conditional = false, signal?: AbortSignal): Promise<Record<string, unknown>> {
  const publicKey: PublicKeyCredentialRequestOptions = {
    challenge: fromBase64url(o.challenge),
    rpId: o.rpId,
    timeout: o.timeout,
    userVerification: o.userVerification as UserVerificationRequirement,
    allowCredentials: (o.allowCredentials ?? []).map(descriptor),
  };
  const cred = answered(
    await navigator.credentials.get({
      publicKey,
      signal,
      ...(conditional ? { mediation: "conditional" as CredentialMediationRequirement } : {}),
    }),
  );
  const r = cred.response as AuthenticatorAssertionResponse;
  return asJson(cred, {
    clientDataJSON: toBase64url(r.clientDataJSON),
    authenticatorData: toBase64url(r.authenticatorData),
    signature: toBase64url(r.signature),
    userHandle: r.userHandle ? toBase64url(r.userHandle) : undefined,
  });
}
