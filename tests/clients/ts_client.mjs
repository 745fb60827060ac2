// The official MCP TypeScript SDK against the MCP face, run by the tests (make clients):
// initialize, list the tools, call one, and a call held for a reviewer with progress.
// Prints what it saw as JSON.   RABS_URL=… RABS_MCP_TOKEN=rabs_… node ts_client.mjs
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const transport = new StreamableHTTPClientTransport(new URL(`${process.env.RABS_URL}/mcp`), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.RABS_MCP_TOKEN}` } },
});
const client = new Client({ name: "rabs-ts-test", version: "1.0.0" });
await client.connect(transport);

const seen = { server: client.getServerVersion(), capabilities: client.getServerCapabilities() };
seen.tools = (await client.listTools()).tools.map((t) => ({ name: t.name, title: t.title, meta: t._meta }));
seen.read = await client.callTool(
  { name: "roster_shift_read", arguments: { date_from: "2026-03-02", date_to: "2026-03-02" },
    _meta: { "rabs/reason": "check Monday's cover" } },
);
seen.progress = [];
seen.held = await client.callTool(
  { name: "transport_vehicle_book", arguments: JSON.parse(process.env.RABS_BOOK) },
  undefined,
  {
    onprogress: (p) => seen.progress.push(p),
    resetTimeoutOnProgress: true,
    timeout: 5000, // shorter than the hold: only the progress keeps the request alive
  },
);
await client.close();
console.log(JSON.stringify(seen));
