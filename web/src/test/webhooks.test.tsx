import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { beforeEach, expect, it, vi } from "vitest";
import { Webhooks } from "../pages/webhooks";
import { mockServer, renderAt } from "./helpers";

beforeEach(() => vi.unstubAllGlobals());

const hook = {
  id: "w1",
  organizationId: "o1",
  url: "https://crm.example.com/hooks",
  events: ["invitation.*", "member.*"],
  description: null,
  enabled: true,
  disabledReason: null,
  failuresInRow: 0,
  previousSecretUntil: null,
  createdAt: "2026-11-01T10:00:00.000Z",
  updatedAt: "2026-11-01T10:00:00.000Z",
};

const delivery = {
  id: "msg_1",
  webhookId: "w1",
  eventId: "e1",
  type: "member.added",
  status: "failed",
  createdAt: "2026-11-01T10:00:00.000Z",
  nextAttemptAt: null,
  attempts: [
    { at: "2026-11-01T10:00:00.000Z", statusCode: 500, error: null, durationMs: 12 },
    { at: "2026-11-01T10:05:00.000Z", statusCode: null, error: "no answer within 10000 ms", durationMs: 10000 },
  ],
  payload: { type: "member.added" },
};

it("adds an endpoint, shows its secret once, lists its deliveries, sends one again, deletes it", async () => {
  let hooks: (typeof hook)[] = [];
  let deliveries = [delivery];
  const { sent } = mockServer({
    "GET /organization/webhook/list": () => ({ body: hooks }),
    "POST /organization/webhook/create": () => {
      hooks = [hook];
      return { body: { ...hook, secret: "whsec_SECRET" } };
    },
    "GET /organization/webhook/deliveries": () => ({ body: { deliveries, nextCursor: null } }),
    "POST /organization/webhook/redeliver": () => {
      deliveries = [{ ...delivery, status: "pending" }];
      return { body: deliveries[0] };
    },
    "POST /organization/webhook/update": (b) => {
      hooks = [{ ...hook, enabled: (b as { enabled: boolean }).enabled }];
      return { body: hooks[0] };
    },
    "POST /organization/webhook/delete": () => {
      hooks = [];
      return { body: { success: true } };
    },
  });
  renderAt("/", [{ path: "/", element: <Webhooks orgId="o1" /> }]);
  expect(await screen.findByText("No endpoints yet.")).toBeInTheDocument();
  await userEvent.type(screen.getByLabelText("Endpoint URL"), "https://crm.example.com/hooks");
  await userEvent.click(screen.getByLabelText(/Invitations made/));
  await userEvent.click(screen.getByRole("button", { name: "Add the endpoint" }));
  expect(await screen.findByLabelText("Signing secret")).toHaveTextContent("whsec_SECRET");
  expect(sent.find((s) => s.path === "/organization/webhook/create")?.body).toEqual({
    organizationId: "o1",
    url: "https://crm.example.com/hooks",
    events: ["member.*", "invitation.*"],
  });
  const list = await screen.findByRole("list", { name: "Webhook endpoints" });
  const [row] = within(list).getAllByRole("listitem");
  expect(row).toHaveTextContent("invitation.*, member.* · on");
  expect(row).not.toHaveTextContent("SECRET");
  await userEvent.click(screen.getByRole("button", { name: "Done" }));
  expect(screen.queryByText(/SECRET/)).toBeNull();

  // Its deliveries: the failed one with its attempts, sent again.
  await userEvent.click(within(row!).getByRole("button", { name: `Deliveries to ${hook.url}` }));
  const table = await screen.findByRole("table", { name: `Deliveries to ${hook.url}` });
  expect(table).toHaveTextContent("failed (2 attempts)");
  expect(table).toHaveTextContent("no answer within 10000 ms");
  await userEvent.click(within(table).getByRole("button", { name: "Send member.added again" }));
  await waitFor(() => expect(table).toHaveTextContent("pending"));
  expect(sent.find((s) => s.path === "/organization/webhook/redeliver")?.body).toEqual({ organizationId: "o1", deliveryId: "msg_1" });

  await userEvent.click(within(row!).getByRole("button", { name: `Turn off ${hook.url}` }));
  expect(await screen.findByText(/turned off: it hears of nothing/)).toBeInTheDocument();
  await userEvent.click(within(row!).getByRole("button", { name: `Delete ${hook.url}` }));
  const dialog = screen.getByRole("dialog", { name: `Delete ${hook.url}?` });
  await userEvent.click(within(dialog).getByRole("button", { name: "Delete" }));
  await waitFor(() => expect(screen.getByText("No endpoints yet.")).toBeInTheDocument());
});

it("a refused address is worded for the person", async () => {
  mockServer({
    "GET /organization/webhook/list": () => ({ body: [] }),
    "POST /organization/webhook/create": () => ({ status: 400, body: { code: "WEBHOOK_URL_NOT_ALLOWED", message: "x" } }),
  });
  renderAt("/", [{ path: "/", element: <Webhooks orgId="o1" /> }]);
  await userEvent.type(await screen.findByLabelText("Endpoint URL"), "https://10.0.0.1/x");
  await userEvent.click(screen.getByRole("button", { name: "Add the endpoint" }));
  expect(await screen.findByText(/private or local: webhooks go to public addresses only/)).toBeInTheDocument();
});
