-- A webhook attempt keeps the class of its error, not the raw text, which
-- named the URL and told an open port from a closed one (issue 21).
UPDATE webhook_attempts SET error = CASE
    WHEN error = '' THEN ''
    WHEN status_code <> 0 THEN 'http_status'
    WHEN lower(error) LIKE '%timeout%' OR lower(error) LIKE '%deadline exceeded%' OR lower(error) LIKE '%timed out%' THEN 'timeout'
    WHEN lower(error) LIKE '%tls%' OR lower(error) LIKE '%x509%' OR lower(error) LIKE '%certificate%' THEN 'tls'
    ELSE 'unreachable'
END;
