// A code agent (sdk troupe-js@1): Troupe runs `run` in its sandbox and journals every ctx call, so the run is
// replayed from the start after each wait. Keep what decides a call deterministic (no Date.now, no Math.random).
// Types: sdks/js (`/** @type {import('../../sdks/js/src/index').Agent} */`).

const PROMPTS = {
  billing: 'You answer billing questions for a software company. Be brief and exact about amounts and dates.',
  technical: 'You answer technical support questions for a software company. Give one concrete next step.',
};

/** The rule every answer must keep: it starts with "Answer:" (the help desk's format). */
function passes(text) {
  return /^Answer:/.test(text.trim());
}

/** @type {import('../../sdks/js/src/index').Agent} */
exports.agent = {
  instructions: PROMPTS.technical,
  async run(ctx, input) {
    const route = /refund|invoice|bill|charge|price|plan/i.test(input) ? 'billing' : 'technical';
    ctx.emit(`routed to ${route}`);
    // In parallel: a custom tool (runs in the sandbox) and an external one (your service answers it).
    const [account, status] = await Promise.all([ctx.tool('lookup_account', { question: input }), ctx.tool('service_status', { area: route })]);
    const facts = `Account: ${JSON.stringify(account)}\nService status: ${JSON.stringify(status)}`;
    const messages = [{ role: 'user', content: `${input}\n\n${facts}` }];
    let answer = await ctx.model({ system: PROMPTS[route], messages });
    if (!passes(answer.text)) {
      // One retry, with the rule spelled out.
      ctx.emit('the answer broke the format rule; retrying once');
      answer = await ctx.model({ system: `${PROMPTS[route]} Always start your reply with "Answer:".`, messages });
    }
    return passes(answer.text) ? answer.text : `Answer: (needs a human) ${answer.text}`;
  },
};
