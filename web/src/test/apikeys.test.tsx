import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { beforeEach, expect, it, vi } from "vitest";
import { ApiKeys } from "../pages/apikeys";
import { mockServer, renderAt, session } from "./helpers";

beforeEach(() => vi.unstubAllGlobals());

const key = {
  id: "k1",
  configId: "default",
  name: "deploy",
  start: "gh_AbC",
  prefix: "gh_",
  referenceId: "u1",
  userId: "u1",
  refillInterval: null,
  refillAmount: null,
  lastRefillAt: null,
  enabled: true,
  rateLimitEnabled: true,
  rateLimitTimeWindow: 86400000,
  rateLimitMax: 10,
  requestCount: 0,
  remaining: null,
  lastRequest: null,
  expiresAt: null,
  createdAt: "2026-11-01T10:00:00.000Z",
  updatedAt: "2026-11-01T10:00:00.000Z",
  permissions: null,
  metadata: null,
};

it("makes a key, shows it once, lists it and revokes it after confirmation", async () => {
  let keys: (typeof key)[] = [];
  const { sent } = mockServer({
    "GET /get-session": () => ({ body: session }),
    "GET /api-key/list": () => ({ body: { apiKeys: keys, total: keys.length } }),
    "POST /api-key/create": () => {
      keys = [key];
      return { body: { ...key, key: "gh_AbCdefSECRET" } };
    },
    "POST /api-key/delete": () => {
      keys = [];
      return { body: { success: true } };
    },
  });
  renderAt("/", [{ path: "/", element: <ApiKeys /> }]);
  expect(await screen.findByText("No keys yet.")).toBeInTheDocument();
  expect(screen.getByRole("button", { name: "Make a key" })).toBeDisabled();
  await userEvent.type(screen.getByLabelText("Key name"), "deploy");
  await userEvent.selectOptions(screen.getByLabelText("Expires"), "30 days");
  await userEvent.click(screen.getByRole("button", { name: "Make a key" }));
  expect(await screen.findByLabelText("New API key")).toHaveTextContent("gh_AbCdefSECRET");
  expect(sent.find((s) => s.path === "/api-key/create")?.body).toEqual({ name: "deploy", expiresIn: 30 * 86400 });
  const list = await screen.findByRole("list", { name: "API keys" });
  const [row] = within(list).getAllByRole("listitem");
  expect(row).toHaveTextContent("deploy");
  expect(row).toHaveTextContent("gh_AbC…");
  expect(row).toHaveTextContent("never used yet");
  expect(row).not.toHaveTextContent("SECRET");
  // Once dismissed, the key is gone from the page.
  await userEvent.click(screen.getByRole("button", { name: "Done" }));
  expect(screen.queryByText(/SECRET/)).toBeNull();
  await userEvent.click(within(row!).getByRole("button", { name: "Revoke deploy" }));
  const dialog = screen.getByRole("dialog", { name: "Revoke deploy?" });
  await userEvent.click(within(dialog).getByRole("button", { name: "Revoke" }));
  expect(await screen.findByText(/revoked: it works no more/)).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/api-key/delete")?.body).toEqual({ keyId: "k1" });
  await waitFor(() => expect(screen.getByText("No keys yet.")).toBeInTheDocument());
});

it("an organization's keys are listed and made for that organization", async () => {
  const { sent } = mockServer({
    "GET /api-key/list": (_b, url) => ({
      body: url.searchParams.get("organizationId") === "o1" ? { apiKeys: [{ ...key, referenceId: "o1", organizationId: "o1" }], total: 1 } : { apiKeys: [], total: 0 },
    }),
    "POST /api-key/create": () => ({ status: 403, body: { code: "INSUFFICIENT_API_KEY_PERMISSIONS", message: "x" } }),
  });
  renderAt("/", [{ path: "/", element: <ApiKeys orgId="o1" /> }]);
  const list = await screen.findByRole("list", { name: "The organization's API keys" });
  expect(within(list).getAllByRole("listitem")).toHaveLength(1);
  await userEvent.type(screen.getByLabelText("Key name"), "ci");
  await userEvent.click(screen.getByRole("button", { name: "Make a key" }));
  expect(await screen.findByText(/may not manage this organization's API keys/)).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/api-key/create")?.body).toEqual({ name: "ci", expiresIn: null, organizationId: "o1" });
});
