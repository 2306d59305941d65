'use strict';

/**
 * The entrypoint named by troupe.json ("src/agent.js:agent"): the export
 * `agent` describes how the platform runs the model loop for this agent.
 */
exports.agent = {
  instructions: [
    'You are a concise weather assistant.',
    'Call get_forecast for the city the user names; it returns degrees Celsius.',
    'If the user asks for Fahrenheit, call convert_temperature on the Celsius value.',
    'Call what_to_wear with the high and low when the user asks what to wear, and mention its advice.',
    'Answer in one or two sentences.',
  ].join(' '),
  // The LLM option used when a session does not pick one (the manifest's first option otherwise).
  llm: 'demo',
  // Tools the model may call; names from the manifest's custom_tools.
  tools: ['get_forecast', 'convert_temperature', 'what_to_wear'],
  // Upper bound on model calls per user message, so a confused model cannot loop forever.
  max_turns: 8,
};
