import type { HttpAuthService, LoggerService } from '@backstage/backend-plugin-api';
import { InputError, ServiceUnavailableError } from '@backstage/errors';
import {
  type AssistantEvent,
  type AssistantStatus,
  type ChatMessage,
  checkInput,
} from '@kpromo/plugin-promotions-common';
import { callerIdentity, type PromotionsOperations } from '@kpromo/plugin-promotions-node';
import express from 'express';
import Router from 'express-promise-router';
import { openCallerTools } from './callerTools.js';
import { type ChatRound, createChatClient, ModelEndpointError } from './chatClient.js';
import type { LlmConfig } from './config.js';
import { ConfirmationBinder } from './confirmation.js';
import { ChatBody, closeUnansweredCalls, pendingCall } from './conversation.js';
import { DEFAULT_SYSTEM_PROMPT } from './prompt.js';
import { runConversation } from './toolLoop.js';

/**
 * The assistant's routes (under /api/promotions/assistant):
 *
 * - `GET /` — {@link AssistantStatus}: whether chat is configured (never the endpoint's key).
 * - `POST /chat` — body {messages, confirm?}; answers NDJSON {@link AssistantEvent}s. The model runs
 *   with the configured key, server-side; the tools it may call are the controller's MCP tools as
 *   the signed-in user sees them, run as that user. Calls that change something stop the loop with
 *   a `pending` event; only a later request with `confirm` (the token issued for exactly that call,
 *   for this user, within 5 minutes, once) runs it.
 *
 * Users only: a confirmation is a person's click, and external agents reach the same tools through
 * the MCP proxy (/api/promotions/mcp) or the actions registry.
 */
export function createAssistantRouter(o: {
  service: PromotionsOperations;
  /** `promotions.assistant.llm` (./config.ts); undefined: chat is off, the status route says so. */
  llm: LlmConfig | undefined;
  httpAuth: HttpAuthService;
  logger: LoggerService;
  /** Test seam: the model client (default: the OpenAI-compatible client for the config). */
  chat?: (cfg: LlmConfig) => ChatRound;
}): express.Router {
  const { service: s, httpAuth } = o;
  const cfg = o.llm;
  const chat = cfg ? (o.chat ?? createChatClient)(cfg) : undefined;
  const binder = new ConfirmationBinder();
  const logger = o.logger.child({ component: 'assistant' });
  const router = Router();
  router.use(express.json({ limit: '1mb' }));

  router.get('/', async (req, res) => {
    await httpAuth.credentials(req, { allow: ['user'] });
    const status: AssistantStatus = cfg
      ? { enabled: true, model: cfg.model, maxToolRounds: cfg.maxToolRounds }
      : { enabled: false };
    res.json(status);
  });

  router.post('/chat', async (req, res) => {
    const credentials = await httpAuth.credentials(req, { allow: ['user'] });
    if (!cfg || !chat) throw new ServiceUnavailableError('the assistant is not configured (promotions.assistant.llm)');
    const mcp = s.controllerMcp;
    if (!mcp)
      throw new ServiceUnavailableError(
        'the assistant needs the controller MCP endpoint (promotions.controller.mcpUrl / token)',
      );
    const parsed = checkInput(ChatBody, req.body, 'request body');
    if (!parsed.ok) throw new InputError(parsed.message);
    const body = parsed.value;
    const caller = { kind: 'backstage' as const, credentials };
    const user = callerIdentity(caller);
    let history = body.messages as ChatMessage[];
    let resume: Parameters<typeof runConversation>[2];
    if (body.confirm) {
      const call = pendingCall(history, body.confirm.id);
      if (typeof call === 'string') throw new InputError(`confirm: ${call}`);
      const check = binder.redeem(
        user,
        { id: call.id, name: call.function.name, arguments: call.function.arguments },
        body.confirm.token,
      );
      if (!check.ok) throw new InputError(`confirm: ${check.reason}`);
      resume = { call, approve: body.confirm.approve };
      logger.info(
        `${user} ${body.confirm.approve ? 'confirmed' : 'declined'} ${call.function.name} ${call.function.arguments.slice(0, 500)}`,
      );
    } else {
      if (history[history.length - 1].role !== 'user')
        throw new InputError("messages: the last message must be the user's (or send confirm for a waiting call)");
      history = closeUnansweredCalls(history);
    }

    const ac = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) ac.abort();
    });
    res.status(200);
    res.setHeader('content-type', 'application/x-ndjson; charset=utf-8');
    // no-transform keeps the compression middleware from buffering the stream.
    res.setHeader('cache-control', 'no-cache, no-transform');
    res.flushHeaders();
    const emit = (e: AssistantEvent) => {
      if (res.writableEnded) return;
      res.write(`${JSON.stringify(e)}\n`);
      (res as unknown as { flush?: () => void }).flush?.();
    };

    let tools: Awaited<ReturnType<typeof openCallerTools>> | undefined;
    try {
      try {
        tools = await openCallerTools({
          mcpUrl: mcp.url,
          token: mcp.token,
          actor: await s.actorOf(caller),
          signal: ac.signal,
          only: cfg.tools,
        });
      } catch (e) {
        logger.warn(`cannot open the controller's MCP tools for ${user}: ${(e as Error).message}`);
        emit({
          type: 'error',
          code: 'tools_unavailable',
          message: `the kpromo tools are unavailable: ${(e as Error).message}`,
        });
        return;
      }
      const t = tools;
      await runConversation(
        {
          chat,
          preamble: [{ role: 'system', content: cfg.systemPrompt ?? DEFAULT_SYSTEM_PROMPT }, ...cfg.fewShot],
          tools: t.tools,
          callTool: (name, args) => t.call(name, args),
          issueConfirmation: (call) => binder.issue(user, call),
          maxToolRounds: cfg.maxToolRounds,
          maxToolResultChars: cfg.maxToolResultChars,
          signal: ac.signal,
          emit,
        },
        history,
        resume,
      );
    } catch (e) {
      if (e instanceof ModelEndpointError) {
        logger.warn(`model endpoint failed for ${user}: ${e.message}`);
        emit({ type: 'error', code: e.code, message: e.message });
      } else if (!ac.signal.aborted) {
        logger.error(`assistant chat failed for ${user}: ${(e as Error).message}`);
        emit({ type: 'error', code: 'model_error', message: `the assistant failed: ${(e as Error).message}` });
      }
    } finally {
      await tools?.close().catch(() => undefined);
      res.end();
    }
  });

  return router;
}
