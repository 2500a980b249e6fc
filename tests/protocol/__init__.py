"""Protocol tests: every refusal of the contract, the envelope (request_id, limits, decoding), and a fuzz."""
