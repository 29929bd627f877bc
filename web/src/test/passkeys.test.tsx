import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { Passkeys } from "../pages/passkeys";
import { SignIn } from "../pages/auth";
import { fromBase64url, toBase64url } from "../webauthn";
import { mockServer, renderAt, session } from "./helpers";

beforeEach(() => vi.unstubAllGlobals());
afterEach(() => {
  delete (window as { PublicKeyCredential?: unknown }).PublicKeyCredential;
});

const bytes = (...b: number[]) => new Uint8Array(b).buffer;

const passkey = {
  id: "pk1",
  name: "Laptop",
  publicKey: "pQECAyYgASFY",
  userId: "u1",
  credentialID: "AQID",
  counter: 3,
  deviceType: "singleDevice",
  backedUp: false,
  transports: "internal",
  createdAt: "2026-11-01T10:00:00.000Z",
  aaguid: "00000000-0000-0000-0000-000000000000",
  lastUsedAt: null,
};

/** A browser with passkeys: `navigator.credentials` answers as an authenticator would. */
function withAuthenticator() {
  (window as { PublicKeyCredential?: unknown }).PublicKeyCredential = function PublicKeyCredential() {};
  const credential = (response: Record<string, unknown>) => ({
    id: "AQID",
    rawId: bytes(1, 2, 3),
    type: "public-key",
    authenticatorAttachment: "platform",
    getClientExtensionResults: () => ({}),
    response: { clientDataJSON: bytes(123, 125), ...response },
  });
  const create = vi.fn(async () => credential({ attestationObject: bytes(0xa0), getTransports: () => ["internal"] }));
  const get = vi.fn(async () => credential({ authenticatorData: bytes(9), signature: bytes(0xff, 0xfe), userHandle: bytes(7) }));
  Object.defineProperty(navigator, "credentials", { value: { create, get }, configurable: true });
  return { create, get };
}

const registerOptions = {
  challenge: "Y2hhbGxlbmdl",
  rp: { name: "Gatehouse", id: "localhost" },
  user: { id: "aGFuZGxl", name: "ann@example.com", displayName: "ann@example.com" },
  pubKeyCredParams: [{ alg: -7, type: "public-key" }],
  timeout: 60000,
  attestation: "none",
  excludeCredentials: [{ id: "AQID", type: "public-key", transports: ["internal"] }],
  authenticatorSelection: { residentKey: "preferred", userVerification: "preferred", requireResidentKey: false },
  extensions: { credProps: true },
  hints: [],
};

it("base64url both ways, without padding", () => {
  expect(toBase64url(bytes(0xfb, 0xff))).toBe("-_8");
  expect(new Uint8Array(fromBase64url("-_8"))).toEqual(new Uint8Array([0xfb, 0xff]));
  expect(toBase64url(fromBase64url("aGFuZGxl"))).toBe("aGFuZGxl");
});

it("lists passkeys, renames one and removes one after confirmation", async () => {
  const { sent } = mockServer({
    "GET /get-session": () => ({ body: session }),
    "GET /passkey/list-user-passkeys": () => ({ body: [passkey, { ...passkey, id: "pk2", name: null, lastUsedAt: "2026-11-02T10:00:00.000Z", deviceType: "multiDevice" }] }),
    "POST /passkey/update-passkey": (b) => ({ body: { passkey: { ...passkey, name: (b as { name: string }).name } } }),
    "POST /passkey/delete-passkey": () => ({ status: 400, body: { code: "LAST_SIGN_IN_METHOD", message: "x" } }),
  });
  renderAt("/", [{ path: "/", element: <Passkeys me={session as never} /> }]);
  const list = await screen.findByRole("list", { name: "Your passkeys" });
  const [first, second] = within(list).getAllByRole("listitem");
  expect(first).toHaveTextContent("Laptop");
  expect(first).toHaveTextContent("never used yet");
  expect(second).toHaveTextContent("Passkey");
  expect(second).toHaveTextContent("last used");
  expect(second).toHaveTextContent("synced");
  await userEvent.click(within(first!).getByRole("button", { name: "Rename Laptop" }));
  const field = screen.getByLabelText("New name for Laptop");
  await userEvent.clear(field);
  await userEvent.type(field, "Work laptop");
  await userEvent.click(screen.getByRole("button", { name: "Save" }));
  await waitFor(() => expect(sent.find((s) => s.path === "/passkey/update-passkey")?.body).toEqual({ id: "pk1", name: "Work laptop" }));
  expect(await screen.findByText("Passkey renamed.")).toBeInTheDocument();
  await userEvent.click(within(second!).getByRole("button", { name: "Remove Passkey" }));
  const dialog = screen.getByRole("dialog", { name: "Remove Passkey?" });
  await userEvent.click(within(dialog).getByRole("button", { name: "Remove" }));
  expect(await within(dialog).findByText(/only way to sign in/)).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/passkey/delete-passkey")?.body).toEqual({ id: "pk2" });
});

it("adds a passkey: the browser's credential goes to the server as base64url JSON", async () => {
  const { create } = withAuthenticator();
  const { sent } = mockServer({
    "GET /get-session": () => ({ body: session }),
    "GET /passkey/list-user-passkeys": () => ({ body: [] }),
    "GET /passkey/generate-register-options": () => ({ body: registerOptions }),
    "POST /passkey/verify-registration": () => ({ body: passkey }),
  });
  renderAt("/", [{ path: "/", element: <Passkeys me={session as never} /> }]);
  expect(await screen.findByText("No passkeys yet.")).toBeInTheDocument();
  await userEvent.click(screen.getByRole("button", { name: "Add a passkey" }));
  expect(await screen.findByText(/Passkey added/)).toBeInTheDocument();
  const asked = (create.mock.calls[0] as unknown as [{ publicKey: PublicKeyCredentialCreationOptions }])[0].publicKey;
  expect(toBase64url(asked.challenge as ArrayBuffer)).toBe("Y2hhbGxlbmdl");
  expect(toBase64url(asked.user.id as ArrayBuffer)).toBe("aGFuZGxl");
  expect(toBase64url(asked.excludeCredentials![0]!.id as ArrayBuffer)).toBe("AQID");
  const registered = sent.find((s) => s.path === "/passkey/verify-registration")?.body as { name: string; response: unknown };
  expect(registered.name).toBeTruthy();
  expect(registered.response).toEqual({
    id: "AQID",
    rawId: "AQID",
    type: "public-key",
    response: { clientDataJSON: "e30", attestationObject: "oA", transports: ["internal"] },
    clientExtensionResults: {},
    authenticatorAttachment: "platform",
  });
});

it("signs in with a passkey from the sign-in page", async () => {
  const { get } = withAuthenticator();
  let signedIn = false;
  const { sent } = mockServer({
    "GET /get-session": () => ({ body: signedIn ? session : null }),
    "GET /social-providers": () => ({ body: [] }),
    "GET /passkey/generate-authenticate-options": () => ({ body: { rpId: "localhost", challenge: "Y2hhbGxlbmdl", timeout: 60000, userVerification: "preferred" } }),
    "POST /passkey/verify-authentication": () => {
      signedIn = true;
      return { body: { session: session.session, user: session.user } };
    },
  });
  renderAt("/sign-in?redirectTo=/next", [
    { path: "/sign-in", element: <SignIn /> },
    { path: "/next", element: <p>next page</p> },
  ]);
  expect(screen.getByLabelText("Email")).toHaveAttribute("autocomplete", "username webauthn");
  await userEvent.click(await screen.findByRole("button", { name: "Sign in with a passkey" }));
  expect(await screen.findByText("next page")).toBeInTheDocument();
  expect(get).toHaveBeenCalled();
  expect(sent.find((s) => s.path === "/passkey/verify-authentication")?.body).toEqual({
    response: {
      id: "AQID",
      rawId: "AQID",
      type: "public-key",
      response: { clientDataJSON: "e30", authenticatorData: "CQ", signature: "__4", userHandle: "Bw" },
      clientExtensionResults: {},
      authenticatorAttachment: "platform",
    },
  });
});
