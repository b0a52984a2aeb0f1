export { AuthError, Authenticator, Authorizer, type Caller, loadStaticTokens } from '../auth/index.js';
export { MCP_DEFAULTS, type McpConfig, McpConfigSchema } from './config.js';
export { type McpHttp, startMcpHttp } from './http.js';
export { createMcpServer, MCP_SERVER_INFO, type McpConnection, type McpServerOptions } from './server.js';
export { serveMcpStdio } from './stdio.js';
