// An upstream MCP server for bench/mcp_load.py, built with the official TypeScript SDK's server
// classes: one tool, get_current_time(timezone), the same name, arguments and answer as
// mcp-server-time's, over Streamable HTTP at /mcp (a session per client, JSON answers).
//
//     node upstream_time.mjs PORT      (run beside var/clients/ts/node_modules: make clients)

import http from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const port = Number(process.argv[2] || 0);
const transports = new Map();

function now(timezone) {
  const date = new Date();
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-CA", {
      timeZone: timezone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
      hour: "2-digit", minute: "2-digit", second: "2-digit",
    }).formatToParts(date).map((part) => [part.type, part.value]),
  );
  const datetime = `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}`;
  return { timezone, datetime, day_of_week: date.toLocaleDateString("en-US", { timeZone: timezone, weekday: "long" }), is_dst: false };
}

function server() {
  const mcp = new McpServer({ name: "time", version: "1.0.0" });
  mcp.registerTool(
    "get_current_time",
    {
      description: "Get current time in a specific timezones",
      inputSchema: { timezone: z.string().describe("IANA timezone name, e.g. 'UTC'") },
      annotations: { readOnlyHint: true },
    },
    async ({ timezone }) => {
      try {
        return { content: [{ type: "text", text: JSON.stringify(now(timezone), null, 2) }] };
      } catch (error) {
        return { isError: true, content: [{ type: "text", text: `Invalid timezone: ${timezone}` }] };
      }
    },
  );
  return mcp;
}

async function body(request) {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
}

const app = http.createServer(async (request, response) => {
  try {
    if (!request.url.startsWith("/mcp")) {
      response.writeHead(request.url === "/health" ? 200 : 404).end();
      return;
    }
    const message = request.method === "POST" ? await body(request) : undefined;
    const id = request.headers["mcp-session-id"];
    let transport = id ? transports.get(id) : undefined;
    if (!transport) {
      if (id || request.method !== "POST" || !isInitializeRequest(message)) {
        response.writeHead(id ? 404 : 400, { "content-type": "application/json" }).end(
          JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "no such session" } }),
        );
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (session) => transports.set(session, transport),
      });
      transport.onclose = () => transports.delete(transport.sessionId);
      await server().connect(transport);
    }
    await transport.handleRequest(request, response, message);
  } catch (error) {
    if (!response.headersSent) response.writeHead(500).end(String(error));
  }
});
app.keepAliveTimeout = 60_000;
app.listen(port, "127.0.0.1", () => console.log(`listening ${app.address().port}`));
