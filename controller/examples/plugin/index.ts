import { type Config, loadConfig, type Running, startController } from '@kpromo/controller';
import type { ControllerPlugin } from '@kpromo/controller/plugin';
import { configMapDelivery } from './configMapDelivery.js';
import { slackNotifications } from './slackNotifications.js';
import { type SloBudgetOptions, sloBudgetCheck } from './sloBudgetCheck.js';
import { webServiceKind } from './webServiceKind.js';

/** One plugin with one extension of each kind. */
export function examplePlugin(o: { slackWebhookUrl: string; sloService: SloBudgetOptions }): ControllerPlugin {
  return {
    name: 'example.com',
    deliveryMethods: [configMapDelivery],
    workloadKinds: [webServiceKind],
    notificationProviders: [
      slackNotifications({ webhookUrl: o.slackWebhookUrl, events: ['AppPromoted', 'AppFailed', 'PlanComplete'] }),
    ],
    checkProviders: [sloBudgetCheck(o.sloService)],
  };
}

/**
 * A controller process with the plugin: the platform team's own entry point instead of
 * `kpromo-controller run`. `startController` refuses to start when a name is taken twice.
 */
export function runWithExamplePlugin(
  configFile: string,
  slackWebhookUrl: string,
  sloServiceUrl: string,
): Promise<Running> {
  const config: Config = loadConfig({ file: configFile, env: process.env });
  return startController(config, {
    plugins: [examplePlugin({ slackWebhookUrl, sloService: { baseUrl: sloServiceUrl } })],
  });
}
