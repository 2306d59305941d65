// Stands in for a CRM lookup; runs in Troupe's sandbox.
exports.handler = async ({ question }) => ({ plan: 'Team', renews_on: '2026-12-01', open_tickets: question.length % 3 });
